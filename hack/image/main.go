// Command image builds the nhc-controller container image without a Docker
// daemon: a static binary on an empty base, with a nonroot user and the
// entrypoint, written as an OCI image layout and as a tarball that
// `docker load`, `podman load`, `kind load image-archive` and
// `ctr images import` read. The same source and toolchain give the same
// digest: the build is trimmed, carries no build ID, and every timestamp is
// the commit's.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nodehealthcheck/nhc-controller/hack/internal/manifests"
)

// nonroot is the user and group the image runs as, as distroless's nonroot.
const nonroot = 65532

func main() {
	output := flag.String("output", "_output/image", "folder for the OCI layout (oci/) and the tarballs")
	tag := flag.String("tag", "", "the image reference recorded in the layout and the tarballs; by default the image "+manifests.Kustomization+" deploys")
	version := flag.String("version", "dev", "the version stamped into the binary and the image labels")
	// The host's by default: kind on an arm64 laptop runs arm64 images.
	archs := flag.String("arch", runtime.GOARCH, "the target architectures (GOARCH), comma-separated; more than one makes an image index")
	push := flag.Bool("push", false, "also push the image to --tag's registry, with the credentials of docker login or podman login")
	flag.Parse()
	if *tag == "" {
		repository, deployed, err := manifests.Image(manifests.Kustomization)
		if err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(1)
		}
		*tag = repository + ":" + deployed
	}
	if err := build(*output, *tag, *version, strings.Split(*archs, ","), *push); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// build builds an image per architecture and writes them: as an OCI
// layout whose index lists them all, and as one tarball each.
func build(output, tag, version string, archs []string, push bool) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	created, revision, err := commit()
	if err != nil {
		return err
	}
	images := make([]v1.Image, len(archs))
	for i, arch := range archs {
		if images[i], err = buildImage(created, revision, version, arch); err != nil {
			return fmt.Errorf("%s: %w", arch, err)
		}
	}
	index, err := writeAll(output, ref, archs, images)
	if err != nil || !push {
		return err
	}
	if len(images) == 1 {
		err = remote.Write(ref, images[0], remote.WithAuthFromKeychain(authn.DefaultKeychain))
	} else {
		err = remote.WriteIndex(ref, index, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	}
	if err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	fmt.Printf("pushed %s\n", ref)
	return nil
}

// buildImage builds the image of one architecture.
func buildImage(created time.Time, revision, version, arch string) (v1.Image, error) {
	work, err := os.MkdirTemp("", "nhc-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	binary := filepath.Join(work, "nhc-controller")
	if err := goBuild(binary, version, arch); err != nil {
		return nil, err
	}
	layer, err := rootfsLayer(binary, "LICENSE", created)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	user := strconv.Itoa(nonroot) + ":" + strconv.Itoa(nonroot)
	img, err = mutate.Config(img, v1.Config{
		Entrypoint: []string{"/nhc-controller"},
		User:       user,
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "nhc-controller",
			"org.opencontainers.image.description": "Kubernetes NodeHealthCheck controller",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.revision":    revision,
			"org.opencontainers.image.source":      "https://github.com/nodehealthcheck/nhc-controller",
			"org.opencontainers.image.licenses":    "Apache-2.0",
		},
	})
	if err != nil {
		return nil, err
	}
	if img, err = mutate.CreatedAt(img, v1.Time{Time: created}); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf.OS, cf.Architecture = "linux", arch
	return mutate.ConfigFile(img, cf)
}

// writeAll replaces the output folder's OCI layout and tarballs, and prints
// the digests: one image is the layout's only entry and nhc-controller.tar,
// as before; several are an index in the layout (what a registry serves
// for the tag) and nhc-controller-linux-<arch>.tar each, since a tarball
// that docker load or kind load image-archive reads holds one platform per
// tag. It returns the index.
func writeAll(output string, ref name.Tag, archs []string, images []v1.Image) (v1.ImageIndex, error) {
	oci := filepath.Join(output, "oci")
	if err := os.RemoveAll(oci); err != nil {
		return nil, err
	}
	path, err := layout.Write(oci, empty.Index)
	if err != nil {
		return nil, err
	}
	named := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()})
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range images {
		index = mutate.AppendManifests(index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: archs[i]}}})
	}
	files := []string{"nhc-controller.tar"}
	if len(images) == 1 {
		err = path.AppendImage(images[0], named)
	} else {
		err = path.AppendIndex(index, named)
		files = files[:0]
		for _, arch := range archs {
			files = append(files, "nhc-controller-linux-"+arch+".tar")
		}
	}
	if err != nil {
		return nil, err
	}
	fmt.Printf("%s\n  OCI layout: %s\n", ref, oci)
	for i, img := range images {
		archive := filepath.Join(output, files[i])
		if err := tarball.WriteToFile(archive, ref, img); err != nil {
			return nil, err
		}
		digest, err := img.Digest()
		if err != nil {
			return nil, err
		}
		fmt.Printf("  tarball:    %s (%s)\n", archive, digest)
	}
	return index, nil
}

// goBuild builds the static, reproducible binary.
func goBuild(out, version, arch string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -buildid= -X github.com/nodehealthcheck/nhc-controller/pkg/version.stamped="+version, "-o", out, "./cmd/nhc-controller")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the binary: %w", err)
	}
	return nil
}

// commit returns the time and hash of HEAD, the image's creation time and
// revision: the same source gives the same image. Outside a git checkout,
// or with SOURCE_DATE_EPOCH set, that time is used instead.
func commit() (time.Time, string, error) {
	revision := "unknown"
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		revision = strings.TrimSpace(string(out))
	}
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		seconds, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return time.Time{}, "", fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
		}
		return time.Unix(seconds, 0).UTC(), revision, nil
	}
	out, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err != nil {
		return time.Unix(0, 0).UTC(), revision, nil
	}
	seconds, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return time.Time{}, "", err
	}
	return time.Unix(seconds, 0).UTC(), revision, nil
}
