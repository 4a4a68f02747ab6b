// Command libtest tests the library modules as a user's module gets them
// once they are published: each module that go.work names (the
// application's root module aside) is packed as a module zip, as a proxy
// serves one (golang.org/x/mod/zip, the go command's own rules: no nested
// module, nothing outside the module's folder), and served from a file
// GOPROXY to a scratch user module that requires them all, with no replace
// line and no workspace. There it runs what a user runs: go mod tidy, then
// go vet and go test of every package of the library. A test that reads a
// file outside its module, a replace line that points at a sibling, a
// requirement a go.mod forgot, all fail here, while they pass in the
// repository's workspace.
//
// Usage (make test-long runs it):
//
//	go run ./cmd/libtest [-race stream,replay]
//
// It works under .local/libtest (the proxy, the user module) with the
// machine's module cache, so that the third-party packages the workspace
// built are not built again. The modules are served as a version of this
// run's own, v0.1.0-libtest.<unix time> (their go.mods' requirements on
// one another rewritten to it), which no release will ever be: the
// machine's module cache never holds a build of a real version, and no
// version is served with other contents than the module cache (and the
// go command's index of it) already holds for it. Earlier runs' versions
// are removed from the cache first.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// versionPrefix starts the version the modules are served as: a
// pre-release no tag will ever have, made unique per run (version).
const versionPrefix = "v0.1.0-libtest"

// version is this run's.
var version = fmt.Sprintf("%s.%d", versionPrefix, time.Now().Unix())

func main() {
	race := flag.String("race", "", "comma-separated library modules (folder names) whose tests run with the race detector")
	flag.Parse()
	if err := run(strings.Split(*race, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "libtest:", err)
		os.Exit(1)
	}
}

// lib is one library module: its folder and module path.
type lib struct{ dir, path string }

func run(race []string) error {
	libs, err := libraries("go.work")
	if err != nil {
		return err
	}
	work, err := filepath.Abs(filepath.Join(".local", "libtest"))
	if err != nil {
		return err
	}
	proxy, user := filepath.Join(work, "proxy"), filepath.Join(work, "user")
	for _, d := range []string{proxy, user} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	env, cache, err := environment(proxy)
	if err != nil {
		return err
	}
	if err := forget(cache, libs); err != nil {
		return err
	}
	for _, l := range libs {
		if err := pack(proxy, l, libs); err != nil {
			return err
		}
	}
	if err := userModule(user, libs); err != nil {
		return err
	}
	for _, name := range race {
		if name != "" && !slices.ContainsFunc(libs, func(l lib) bool { return l.dir == name }) {
			return fmt.Errorf("-race %s: go.work has no library module in a folder of that name", name)
		}
	}
	var plain, raced []string
	for _, l := range libs {
		if slices.Contains(race, l.dir) {
			raced = append(raced, l.path+"/...")
		} else {
			plain = append(plain, l.path+"/...")
		}
	}
	steps := [][]string{
		{"go", "mod", "tidy"},
		append([]string{"go", "vet"}, append(plain, raced...)...),
		append([]string{"go", "test", "-count=1"}, plain...),
	}
	if len(raced) > 0 {
		steps = append(steps, append([]string{"go", "test", "-count=1", "-race"}, raced...))
	}
	fmt.Printf("libtest: %d library modules packed as %s and served from file://%s to the user module %s\n", len(libs), version, proxy, user)
	for _, s := range steps {
		fmt.Println("libtest:", strings.Join(s, " "))
		start := time.Now()
		cmd := exec.Command(s[0], s[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = user, env, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s in the user module: %w", strings.Join(s, " "), err)
		}
		fmt.Printf("libtest: ok (%s)\n", time.Since(start).Round(time.Second))
	}
	return nil
}

// libraries reads the library modules from go.work: every module it uses
// but the root one.
func libraries(path string) ([]lib, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	wf, err := modfile.ParseWork(path, b, nil)
	if err != nil {
		return nil, err
	}
	var out []lib
	for _, u := range wf.Use {
		dir := filepath.Clean(u.Path)
		if dir == "." {
			continue
		}
		mb, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			return nil, err
		}
		mf, err := modfile.ParseLax(filepath.Join(dir, "go.mod"), mb, nil)
		if err != nil {
			return nil, err
		}
		if len(mf.Replace) > 0 {
			return nil, fmt.Errorf("%s/go.mod has replace lines: a module taken alone (from a proxy) cannot follow them", dir)
		}
		out = append(out, lib{dir: dir, path: mf.Module.Mod.Path})
	}
	if len(out) == 0 {
		return nil, errors.New("go.work names no library module")
	}
	return out, nil
}

// pack writes l as a proxy serves it (list, info, mod and zip), as
// version, with its requirements on the other library modules at version
// too.
func pack(proxy string, l lib, libs []lib) error {
	esc, err := module.EscapePath(l.path)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gomod, err := rewrite(filepath.Join(l.dir, "go.mod"), libs)
	if err != nil {
		return err
	}
	checked, err := modzip.CheckDir(l.dir)
	if err != nil {
		return fmt.Errorf("pack %s: %w", l.dir, err)
	}
	var files []modzip.File
	for _, disk := range checked.Valid { // paths on disk, under l.dir
		rel, err := filepath.Rel(l.dir, disk)
		if err != nil {
			return err
		}
		f := file{path: filepath.ToSlash(rel), disk: disk}
		if f.path == "go.mod" {
			f.content = gomod
		}
		files = append(files, f)
	}
	var z bytes.Buffer
	if err := modzip.Create(&z, module.Version{Path: l.path, Version: version}, files); err != nil {
		return fmt.Errorf("pack %s: %w", l.dir, err)
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, b := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod, version + ".zip": z.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// rewrite is the go.mod at path with its requirements on the library's
// modules at version.
func rewrite(path string, libs []lib) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(path, b, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range slices.Clone(f.Require) {
		if slices.ContainsFunc(libs, func(l lib) bool { return l.path == r.Mod.Path }) {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				return nil, err
			}
		}
	}
	return f.Format()
}

// file is a module file for modzip.Create: from disk, or (go.mod) the
// content given.
type file struct {
	path, disk string
	content    []byte
}

func (f file) Path() string { return f.path }

func (f file) Lstat() (fs.FileInfo, error) {
	fi, err := os.Lstat(f.disk)
	if err != nil || f.content == nil {
		return fi, err
	}
	return sized{fi, int64(len(f.content))}, nil
}

func (f file) Open() (io.ReadCloser, error) {
	if f.content != nil {
		return io.NopCloser(bytes.NewReader(f.content)), nil
	}
	return os.Open(f.disk)
}

// sized is a file's information with another size (go.mod rewritten).
type sized struct {
	fs.FileInfo
	size int64
}

func (s sized) Size() int64 { return s.size }

// userModule writes a module that requires every library module and
// imports each one's package, as a user's would.
func userModule(dir string, libs []lib) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var mod, src strings.Builder
	mod.WriteString("// A user's module, made by cmd/libtest: the library as a proxy serves it.\nmodule example.com/libuser\n\ngo 1.26.0\n\nrequire (\n")
	src.WriteString("// Package libuser imports every library package.\npackage libuser\n\nimport (\n")
	for _, l := range libs {
		fmt.Fprintf(&mod, "\t%s %s\n", l.path, version)
		fmt.Fprintf(&src, "\t_ %q\n", l.path)
	}
	mod.WriteString(")\n")
	src.WriteString(")\n")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "libuser.go"), []byte(src.String()), 0o644)
}

// environment is the go command's environment for the user module, and
// the module cache it uses: no workspace, the library from the file proxy
// and everything else as the machine gets it; no checksum database for the
// library (it is not published), and go.sum entries added as a test's
// requirements need them (-mod=mod).
func environment(proxy string) (env []string, cache string, err error) {
	out, err := exec.Command("go", "env", "-json", "GOMODCACHE", "GOPROXY", "GOFLAGS").Output()
	if err != nil {
		return nil, "", fmt.Errorf("go env: %w", err)
	}
	var goenv struct{ GOMODCACHE, GOPROXY, GOFLAGS string }
	if err := json.Unmarshal(out, &goenv); err != nil || goenv.GOMODCACHE == "" {
		return nil, "", fmt.Errorf("go env: %q (%v)", out, err)
	}
	env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"GOWORK", "GOPROXY", "GOFLAGS", "GONOSUMDB", "GOPRIVATE", "GONOPROXY"}, k)
	})
	if os.Getenv("DYNAMODB_LOCAL_DIR") == "" { // the tests run in the module cache, outside this folder
		if dir, err := filepath.Abs(filepath.Join(".local", "dynamodb-local")); err == nil {
			env = append(env, "DYNAMODB_LOCAL_DIR="+dir)
		}
	}
	return append(env, "GOWORK=off", "GOPROXY=file://"+filepath.ToSlash(proxy)+","+goenv.GOPROXY,
		"GONOSUMDB=github.com/dynastream/*", "GOFLAGS="+strings.TrimSpace(goenv.GOFLAGS+" -mod=mod")), goenv.GOMODCACHE, nil
}

// forget removes the library modules from the module cache (made
// read-only by the go command), so that this run's zips are the ones used.
func forget(cache string, libs []lib) error {
	for _, l := range libs {
		esc, err := module.EscapePath(l.path)
		if err != nil {
			return err
		}
		old, err := filepath.Glob(filepath.Join(cache, filepath.FromSlash(esc)+"@"+versionPrefix+"*"))
		if err != nil {
			return err
		}
		for _, p := range append(old, filepath.Join(cache, "cache", "download", filepath.FromSlash(esc))) {
			if err := removeReadOnly(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func removeReadOnly(p string) error {
	err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(path, 0o755)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.RemoveAll(p)
}
