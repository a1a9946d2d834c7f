package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"time"
)

// The OCI media types of a single-platform image with one uncompressed layer.
const (
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
)

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ociImage is one static binary as the whole root filesystem of an image, run as its entrypoint.
type ociImage struct {
	// Name is the full reference containerd files the image under (io.containerd.image.name).
	Name string
	// Binary is the path of the static executable on this machine.
	Binary string
	// Entrypoint is the binary's name in the image's root directory.
	Entrypoint string
	// Args follow the entrypoint.
	Args []string
}

// writeOCIArchive writes image as an OCI image-layout tar archive, the format `ctr images import`
// reads. It is written by hand rather than by buildah because the cluster's machine has no
// registry to pull a base from, buildah needs its own storage setup, and the image is only a
// binary and a config. Timestamps are fixed so that the same binary gives the same digests.
func writeOCIArchive(image ociImage, out string) error {
	binary, err := os.ReadFile(image.Binary)
	if err != nil {
		return err
	}
	name := path.Base(image.Entrypoint)
	epoch := time.Unix(0, 0).UTC()

	var layer bytes.Buffer
	layerTar := tar.NewWriter(&layer)
	// A /tmp for programs that write temporary files; the root filesystem is otherwise just the
	// binary.
	if err := layerTar.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch}); err != nil {
		return err
	}
	if err := layerTar.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(binary)), ModTime: epoch}); err != nil {
		return err
	}
	if _, err := layerTar.Write(binary); err != nil {
		return err
	}
	if err := layerTar.Close(); err != nil {
		return err
	}
	layerDesc := describe(mediaTypeLayer, layer.Bytes())

	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config": map[string]any{
			"Entrypoint": []string{"/" + name},
			"Cmd":        image.Args,
			"Env":        []string{"PATH=/"},
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	})
	if err != nil {
		return err
	}
	configDesc := describe(mediaTypeConfig, config)

	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeManifest,
		"config":        configDesc,
		"layers":        []ociDescriptor{layerDesc},
	})
	if err != nil {
		return err
	}
	manifestDesc := describe(mediaTypeManifest, manifest)
	manifestDesc.Annotations = map[string]string{
		"io.containerd.image.name":          image.Name,
		"org.opencontainers.image.ref.name": image.Name,
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeIndex,
		"manifests":     []ociDescriptor{manifestDesc},
	})
	if err != nil {
		return err
	}

	file, err := os.Create(out)
	if err != nil {
		return err
	}
	defer file.Close()
	archive := tar.NewWriter(file)
	add := func(name string, data []byte) error {
		if err := archive.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := archive.Write(data)
		return err
	}
	blob := func(desc ociDescriptor, data []byte) error {
		return add("blobs/sha256/"+desc.Digest[len("sha256:"):], data)
	}
	for _, step := range []func() error{
		func() error { return add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)) },
		func() error { return add("index.json", index) },
		func() error { return blob(manifestDesc, manifest) },
		func() error { return blob(configDesc, config) },
		func() error { return blob(layerDesc, layer.Bytes()) },
	} {
		if err := step(); err != nil {
			return fmt.Errorf("writing %s: %w", out, err)
		}
	}
	if err := archive.Close(); err != nil {
		return err
	}
	return file.Close()
}

func describe(mediaType string, data []byte) ociDescriptor {
	sum := sha256.Sum256(data)
	return ociDescriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}
}
