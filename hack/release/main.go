// Command release writes everything a release publishes into one folder,
// with no Docker daemon and no network beyond the Go module proxy:
//   - the image for linux/amd64 and linux/arm64: an OCI layout whose index
//     lists both (oci/, and as an OCI archive, which ctr images import and
//     skopeo read), and a tarball each for docker load and kind load
//     image-archive;
//   - nhc-controller.yaml: the default install in one file, its image
//     pinned to the version and the image index's digest;
//   - nhc-controller-X.Y.Z.tgz: the Helm chart, its version the release's
//     and its image the release's, pinned to the digest too;
//   - nhc-controller.crds.yaml: the CRD alone, for helm upgrade;
//   - nhc-controller.sbom.cdx.json: the controller's software bill of
//     materials (CycloneDX), the Go modules its binary is built from;
//   - kubectl-nhc for linux and darwin, amd64 and arm64, and windows/amd64,
//     as archives, and
//     the krew plugin manifest with their sha256 sums;
//   - image-digest, the image index's digest (sha256:…), one line: what
//     the release workflow signs and attests, and what a user verifies;
//   - release-notes.md, the version's section of CHANGELOG.md;
//   - SHA256SUMS of every file.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nodehealthcheck/nhc-controller/hack/internal/changelog"
)

// defaultRepository is where the project publishes its images, beside its
// module path (.github/workflows/release.yaml pushes there on a tag).
const defaultRepository = "ghcr.io/nodehealthcheck/nhc-controller"

// cyclonedxGomod writes the SBOM: CycloneDX's generator for Go, which
// reads the modules a binary is built from.
const cyclonedxGomod = "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0"

// sbom writes the controller's software bill of materials, every module
// with its licence (detected from the module's files, and asserted: a
// scanner reads licenses, not evidence), and the controller named at the
// release's version, which git describe gives only on a tagged commit.
func sbom(out, version string) error {
	if err := run("go", "run", cyclonedxGomod, "app", "-json", "-licenses", "-assert-licenses", "-main", "cmd/nhc-controller", "-output", out, "."); err != nil {
		return err
	}
	return setSBOMVersion(out, version)
}

// digestFile names the image index's digest in the release folder.
const digestFile = "image-digest"

// crdFile is the NodeHealthCheck CRD, the same in the plain install and the chart.
const crdFile = "manifests/crd/remediation.medik8s.io_nodehealthchecks.yaml"

// pluginPlatforms are the platforms kubectl-nhc is built for.
var pluginPlatforms = [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}}

// pluginBinary is kubectl-nhc's file name on a platform's OS.
func pluginBinary(goos string) string {
	if goos == "windows" {
		return "kubectl-nhc.exe"
	}
	return "kubectl-nhc"
}

// options are the release's flags.
type options struct {
	version, output, repository string
	// helm packages the chart.
	helm string
	push bool
}

func main() {
	var o options
	flag.StringVar(&o.version, "version", "", "the release's version, vMAJOR.MINOR.PATCH")
	flag.StringVar(&o.output, "output", "_output/release", "the folder to write the release into; it is replaced")
	flag.StringVar(&o.repository, "image", defaultRepository, "the image repository, such as registry.example.com/nhc-controller")
	flag.StringVar(&o.helm, "helm", "helm", "the helm that packages the chart (hack/build-helm.sh)")
	flag.BoolVar(&o.push, "push", false, "also push the image index to --image's registry")
	flag.Parse()
	if err := release(o); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func release(o options) error {
	version, output, repository, push := o.version, o.output, o.repository, o.push
	if err := changelog.Check(version); err != nil {
		return err
	}
	notes, err := changelog.Notes("CHANGELOG.md", version)
	if err != nil {
		return err
	}
	if repository == "" {
		repository = defaultRepository
	}
	image := repository + ":" + version
	if err := os.RemoveAll(output); err != nil {
		return err
	}
	if err := os.MkdirAll(output, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(output, "release-notes.md"), []byte(notes), 0o644); err != nil {
		return err
	}
	args := []string{"run", "./hack/image", "--output", output, "--arch", "amd64,arm64", "--tag", image, "--version", version}
	if push {
		args = append(args, "--push")
	}
	if err := run("go", args...); err != nil {
		return err
	}
	// The install file and the chart name the image by digest, pushed or
	// not: the index's digest is its content's, the same once pushed, and
	// a moved tag cannot change what runs.
	digest, err := indexDigest(filepath.Join(output, "oci"))
	if err != nil {
		return err
	}
	image += "@" + digest
	// The workflow signs by digest, never by tag: a tag can move between the
	// push and the signature.
	if err := os.WriteFile(filepath.Join(output, digestFile), []byte(digest+"\n"), 0o644); err != nil {
		return err
	}
	if err := ociArchive(filepath.Join(output, "oci"), filepath.Join(output, "nhc-controller-"+version+"-oci.tar")); err != nil {
		return err
	}
	if err := installYAML(image, filepath.Join(output, "nhc-controller.yaml")); err != nil {
		return err
	}
	if err := chartPackage(o.helm, version, image, output); err != nil {
		return err
	}
	// The CRD alone, for helm upgrade, which leaves crds/ as they were.
	crd, err := os.ReadFile(crdFile)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(output, "nhc-controller.crds.yaml"), crd, 0o644); err != nil {
		return err
	}
	if err := sbom(filepath.Join(output, "nhc-controller.sbom.cdx.json"), version); err != nil {
		return err
	}
	archives, err := pluginArchives(version, output)
	if err != nil {
		return err
	}
	if err := krewManifest(version, archives, filepath.Join(output, "nhc.yaml")); err != nil {
		return err
	}
	return checksums(output)
}

// run runs a command, its output on standard error.
func run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// files lists the regular files of the release folder, sorted.
func files(output string) ([]string, error) {
	entries, err := os.ReadDir(output)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != "SHA256SUMS" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}
