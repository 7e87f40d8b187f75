package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestReadManifest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manifest")
	body := "# comment\n\nexample.com/a /src/a /bin/a.test\nexample.com/b@x /src/b /bin/b.test -test.run=^T$ -test.short\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []suite{
		{pkg: "example.com/a", dir: "/src/a", bin: "/bin/a.test", flags: []string{}},
		{pkg: "example.com/b@x", dir: "/src/b", bin: "/bin/b.test", flags: []string{"-test.run=^T$", "-test.short"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readManifest = %+v; want %+v", got, want)
	}
	if err := os.WriteFile(path, []byte("example.com/a /src/a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readManifest(path); err == nil {
		t.Error("readManifest of a line with two fields = nil error; want one naming the line")
	}
}
