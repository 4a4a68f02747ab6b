package ddblocal

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// loopbackSource starts DynamoDB Local bound to 127.0.0.1: DynamoDB Local
// has no option for its address, and its Jetty server listens on every
// interface, so anyone on the same network could read and write the
// local tables.
//
//go:embed DynamoDBLocalLoopback.java
var loopbackSource []byte

// loopbackMain is the launcher's class.
const loopbackMain = "DynamoDBLocalLoopback"

var (
	launcherMu   sync.Mutex
	launcherDirs = map[string]string{}
)

// launcher compiles the loopback launcher against the jar once (javac, a
// JDK's; about a second) into a cache folder and returns the folder that
// holds its class. Another process compiling at the same time is harmless:
// each compiles into a folder of its own and renames it into place.
func launcher(jar string) (string, error) {
	launcherMu.Lock()
	defer launcherMu.Unlock()
	if dir, ok := launcherDirs[jar]; ok {
		return dir, nil
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", errors.New("javac not found (a JDK compiles the launcher that binds DynamoDB Local to loopback; Debian: apt-get install openjdk-17-jdk-headless)")
	}
	sum := sha256.Sum256(append(append([]byte(jar), 0), loopbackSource...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "ddblocal", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, loopbackMain+".class")); err == nil {
		launcherDirs[jar] = dir
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, loopbackMain+".java")
	if err := os.WriteFile(src, loopbackSource, 0o644); err != nil {
		return "", err
	}
	lib := filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib", "*")
	out, err := exec.Command(javac, "-nowarn", "-cp", jar+string(os.PathListSeparator)+lib, "-d", filepath.Join(tmp, "classes"), src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("compile the loopback launcher: %v: %s", err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(filepath.Join(tmp, "classes"), dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, loopbackMain+".class")); statErr != nil {
			return "", fmt.Errorf("install the loopback launcher: %w", err)
		}
	}
	launcherDirs[jar] = dir
	return dir, nil
}

// noCORS is the only origin DynamoDB Local's CORS allow-list names (its
// default is '*', any web page): a name that cannot exist, so a page the
// developer visits cannot read or write the local tables.
const noCORS = "http://ddblocal.invalid"
