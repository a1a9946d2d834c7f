package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteOCIArchive checks what `ctr images import` relies on: an oci-layout file, an index
// naming the image, and blobs stored under the digests that reference them.
func TestWriteOCIArchive(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "prog")
	if err := os.WriteFile(binary, []byte("#!not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "prog.oci.tar")
	image := ociImage{Name: "localhost/test/prog:1", Binary: binary, Entrypoint: "prog", Args: []string{"a"}}
	if err := writeOCIArchive(image, archive); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	file, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	reader := tar.NewReader(file)
	for {
		header, err := reader.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(reader)
		if err != nil {
			t.Fatal(err)
		}
		files[header.Name] = data
	}
	for name, data := range files {
		if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			sum := sha256.Sum256(data)
			if got := hex.EncodeToString(sum[:]); got != hexDigest {
				t.Errorf("blob %s has digest %s", name, got)
			}
		}
	}
	if _, ok := files["oci-layout"]; !ok {
		t.Fatal("no oci-layout")
	}
	var index struct {
		Manifests []ociDescriptor `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != image.Name {
		t.Fatalf("index manifests %+v, want one named %s", index.Manifests, image.Name)
	}
	var manifest struct {
		Config ociDescriptor   `json:"config"`
		Layers []ociDescriptor `json:"layers"`
	}
	if err := json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(index.Manifests[0].Digest, "sha256:")], &manifest); err != nil {
		t.Fatal(err)
	}
	var config struct {
		Config struct {
			Entrypoint []string
			Cmd        []string
		} `json:"config"`
	}
	if err := json.Unmarshal(files["blobs/sha256/"+strings.TrimPrefix(manifest.Config.Digest, "sha256:")], &config); err != nil {
		t.Fatal(err)
	}
	if strings.Join(config.Config.Entrypoint, " ") != "/prog" || strings.Join(config.Config.Cmd, " ") != "a" {
		t.Errorf("entrypoint %q cmd %q, want /prog a", config.Config.Entrypoint, config.Config.Cmd)
	}
	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	layer := tar.NewReader(strings.NewReader(string(files["blobs/sha256/"+strings.TrimPrefix(manifest.Layers[0].Digest, "sha256:")])))
	found := false
	for {
		header, err := layer.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		found = found || (header.Name == "prog" && header.Mode == 0o755)
	}
	if !found {
		t.Error("the layer has no executable prog at its root")
	}
}
