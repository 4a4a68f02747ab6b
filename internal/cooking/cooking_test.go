package cooking_test

import (
	"testing"

	"github.com/dynastream/dynastream/internal/cooking"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		// Compatibility forms are the letters they stand for.
		"ＳＡＬＴ":        "salt",
		"ﬁlet mignon": "filet-mignon",
		"Salt ①":      "salt-1",
		// Vietnamese
		"Thịt gà":   "thit-ga",
		"đậu":       "dau",
		"Đậu phụ":   "dau-phu",
		"Nước mắm":  "nuoc-mam",
		"Rau muống": "rau-muong",
		"Bánh phở":  "banh-pho",
		// French
		"Crème fraîche":   "creme-fraiche",
		"Œufs":            "oeufs",
		"pâte brisée":     "pate-brisee",
		"Sel de Guérande": "sel-de-guerande",
		// German
		"Weißkohl":         "weisskohl",
		"Möhren":           "mohren",
		"Frühlingszwiebel": "fruhlingszwiebel",
		// Turkish
		"Kırmızı biber": "kirmizi-biber",
		"İncir":         "incir",
		"Şeker":         "seker",
		"Çökelek":       "cokelek",
		"Sucuk (dana)":  "sucuk-dana",
		// Spacing and punctuation
		"  olive   oil!! ": "olive-oil",
		"salt & pepper":    "salt-pepper",
		"1/2 lemon":        "1-2-lemon",
		"---":              "",
		"Ørred":            "orred",
		"味噌":               "味噌",
	} {
		if got := cooking.Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
	// Normalizing twice changes nothing, so queries and writes agree.
	for _, s := range []string{"Thịt gà", "Kırmızı biber", "Crème fraîche"} {
		if n := cooking.Normalize(s); cooking.Normalize(n) != n {
			t.Errorf("Normalize is not idempotent on %q", s)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"Thịt gà", "Weißkohl", "İncir", "a--b", " x "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := cooking.Normalize(s)
		if cooking.Normalize(n) != n {
			t.Fatalf("Normalize(Normalize(%q)) = %q, want %q", s, cooking.Normalize(n), n)
		}
		if len(n) > 0 && (n[0] == '-' || n[len(n)-1] == '-') {
			t.Fatalf("Normalize(%q) = %q: hyphen at an end", s, n)
		}
	})
}
