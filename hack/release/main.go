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
//     materials (CycloneDX), read from the shipped binaries (sbom.go);
//   - kubectl-nhc for linux and darwin, amd64 and arm64, and windows/amd64,
//     as archives, and
//     the krew plugin manifest with their sha256 sums;
//   - image-digest, the image index's digest (sha256:…), one line: what
//     the release workflow signs and attests, and what a user verifies;
//   - release-notes.md, the version's section of CHANGELOG.md;
//   - SHA256SUMS of every file.
//
// It builds a version only from a clean tree at its tag, with go.mod's
// toolchain (hack/release/gate); --version snapshot builds the tree as it
// is, under a version that says so.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nodehealthcheck/nhc-controller/hack/internal/changelog"
	"github.com/nodehealthcheck/nhc-controller/hack/release/gate"
)

// defaultRepository is where the project publishes its images, beside its
// module path (.github/workflows/release.yaml pushes there on a tag).
const defaultRepository = "ghcr.io/nodehealthcheck/nhc-controller"

// digestFile names the image index's digest in the release folder.
const digestFile = "image-digest"

// crdFile is the NodeHealthCheck CRD, the same in the plain install and the chart.
const crdFile = "manifests/crd/remediation.medik8s.io_nodehealthchecks.yaml"

// The tasks a part of the release is asked for by (--only).
const (
	imageTaskName = "image linux/amd64+arm64"
	installTask   = "install file"
)

// buildSlots is how many builds run at once.
const buildSlots = 2

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
	// helm packages the chart; "" builds the pinned one (hack/build-helm.sh)
	// while the rest builds.
	helm string
	push bool
	// only names the one task to build, with those it needs, instead of
	// the whole release; "" builds it all.
	only string
	// reuse keeps the output when it was built from a tree of the same
	// content, with the same options.
	reuse bool
}

func main() {
	var o options
	flag.StringVar(&o.version, "version", "", "the release's version, vMAJOR.MINOR.PATCH, the tag of HEAD; or snapshot, for the tree as it is")
	flag.StringVar(&o.output, "output", "_output/release", "the folder to write the release into; it is replaced")
	flag.StringVar(&o.repository, "image", defaultRepository, "the image repository, such as registry.example.com/nhc-controller")
	flag.StringVar(&o.helm, "helm", "", "the helm that packages the chart; by default hack/build-helm.sh's")
	flag.BoolVar(&o.push, "push", false, "also push the image index to --image's registry")
	flag.StringVar(&o.only, "only", "", "build only this part of the release, with what it needs: \""+installTask+"\" is the image and nhc-controller.yaml, the files a node test installs")
	flag.BoolVar(&o.reuse, "reuse", false, "keep the output if it was built from a tree of the same content with the same options")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	if err := release(ctx, o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "release: written to %s in %s\n", o.output, time.Since(start).Round(time.Second))
}

func release(ctx context.Context, o options, w io.Writer) error {
	r, err := gate.Check(o.version)
	if err != nil {
		return err
	}
	notes, err := changelog.Notes("CHANGELOG.md", r.Notes())
	if err != nil {
		return err
	}
	output := o.output
	var key string
	if o.reuse {
		if key, err = treeKey(o, r.Version); err != nil {
			return err
		}
	}
	if o.reuse && !o.push && builtFrom(output) == key {
		fmt.Fprintf(w, "release: %s holds what this tree builds, kept (--reuse)\n", output)
		return nil
	}
	if err := os.RemoveAll(output); err != nil {
		return err
	}
	if err := os.MkdirAll(output, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(output, "release-notes.md"), []byte(notes), 0o644); err != nil {
		return err
	}
	tasks := releaseTasks(o, r)
	if o.only != "" {
		if tasks, err = withNeeds(tasks, o.only); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "release: %s from %.12s with %s into %s: %d tasks, %d builds at a time\n", r.Version, r.Commit, r.Toolchain, output, len(tasks), buildSlots)
	if err := runTasks(ctx, tasks, buildSlots, w); err != nil {
		return err
	}
	if err := checksums(output); err != nil || !o.reuse {
		return err
	}
	return os.WriteFile(filepath.Join(output, builtFromFile), []byte(key), 0o644)
}

// releaseTasks are the tasks that build a release's files into o.output.
func releaseTasks(o options, r gate.Release) []task {
	version, output := r.Version, o.output
	repository := o.repository
	if repository == "" {
		repository = defaultRepository
	}
	// A snapshot's runbooks are its commit's: it has no tag.
	ref := version
	if r.Snapshot {
		ref = r.Commit
	}
	image := repository + ":" + version
	// Filled in by the tasks that need them first.
	helm, pinned := o.helm, ""
	tasks := []task{
		// Helm first: from source, it takes longest.
		helmTask(&helm),
		{name: imageTaskName, build: true, run: func(ctx context.Context, out io.Writer) error {
			return imageTask(ctx, out, o.push, image, version, output, &pinned)
		}},
		{name: installTask, needs: []string{imageTaskName}, run: func(context.Context, io.Writer) error {
			return installYAML(pinned, filepath.Join(output, "nhc-controller.yaml"))
		}},
		{name: "CRD", run: func(context.Context, io.Writer) error {
			// The CRD alone, for helm upgrade, which leaves crds/ as they were.
			crd, err := os.ReadFile(crdFile)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(output, "nhc-controller.crds.yaml"), crd, 0o644)
		}},
		{name: "chart", needs: []string{imageTaskName, "helm"}, run: func(ctx context.Context, out io.Writer) error {
			return chartPackage(ctx, out, helm, version, ref, pinned, output, r.Time)
		}},
		{name: "SBOM", needs: []string{imageTaskName}, run: func(context.Context, io.Writer) error {
			return sbom(r, filepath.Join(output, "oci"), filepath.Join(output, "nhc-controller.sbom.cdx.json"))
		}},
	}
	return append(tasks, pluginTasks(version, output)...)
}

// helmTask builds Helm from source into *helm, unless it names one.
func helmTask(helm *string) task {
	if *helm != "" {
		return task{name: "helm", run: func(context.Context, io.Writer) error { return nil }}
	}
	return task{name: "helm", build: true, run: func(ctx context.Context, out io.Writer) error {
		var built strings.Builder
		if err := command(ctx, io.MultiWriter(out, &built), nil, "hack/build-helm.sh"); err != nil {
			return err
		}
		lines := strings.Split(strings.TrimSpace(built.String()), "\n")
		*helm = lines[len(lines)-1]
		return nil
	}}
}

// imageTask builds the image for both architectures, pushed or not, and
// sets *pinned to it by digest.
func imageTask(ctx context.Context, out io.Writer, push bool, image, version, output string, pinned *string) error {
	args := []string{"run", "./hack/image", "--output", output, "--arch", "amd64,arm64", "--tag", image, "--version", version}
	if push {
		args = append(args, "--push")
	}
	if err := command(ctx, out, nil, "go", args...); err != nil {
		return err
	}
	// The install file and the chart name the image by digest,
	// pushed or not: the index's digest is its content's, the same
	// once pushed, and a moved tag cannot change what runs.
	digest, err := indexDigest(filepath.Join(output, "oci"))
	if err != nil {
		return err
	}
	*pinned = image + "@" + digest
	// The workflow signs by digest, never by tag: a tag can move
	// between the push and the signature.
	if err := os.WriteFile(filepath.Join(output, digestFile), []byte(digest+"\n"), 0o644); err != nil {
		return err
	}
	return ociArchive(filepath.Join(output, "oci"), filepath.Join(output, "nhc-controller-"+version+"-oci.tar"))
}

// pluginTasks archive kubectl nhc for each platform, and write the krew
// manifest that names the archives.
func pluginTasks(version, output string) []task {
	var tasks []task
	var plugins []string
	archives := map[[2]string]string{}
	for _, platform := range pluginPlatforms {
		name := "kubectl-nhc " + platform[0] + "/" + platform[1]
		plugins = append(plugins, name)
		archive := fmt.Sprintf("kubectl-nhc_%s_%s_%s.tar.gz", version, platform[0], platform[1])
		archives[platform] = archive
		tasks = append(tasks, task{name: name, build: true, run: func(ctx context.Context, out io.Writer) error {
			return pluginArchive(ctx, out, version, platform, filepath.Join(output, archive))
		}})
	}
	return append(tasks, task{name: "krew manifest", needs: plugins, run: func(context.Context, io.Writer) error {
		return krewManifest(version, archives, filepath.Join(output, "nhc.yaml"))
	}})
}

// sbom writes the SBOM of the controller the image ships, after checking
// that it is built with the release's Go.
func sbom(r gate.Release, oci, out string) error {
	binaries, err := shippedBinaries(oci)
	if err != nil {
		return err
	}
	for _, bi := range binaries {
		if bi.GoVersion != r.Toolchain {
			return fmt.Errorf("the image's controller is built with %s, not %s", bi.GoVersion, r.Toolchain)
		}
	}
	dirs, err := moduleDirs(binaries)
	if err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	return writeSBOM(out, sbomInput{version: r.Version, commit: r.Commit, time: r.Time, binaries: binaries, moduleDir: dirs, mainDir: root})
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
