// Package integration proves the NodeHealthCheck API and the remediation
// lifecycle against a real kube-apiserver: the CRD's schema and validation
// rules, its defaults, the generated clientset, informers and listers, and
// pkg/remediation with test remediator CRDs.
package integration

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodehealthcheck/nhc-controller/pkg/generated/clientset/versioned"
	"github.com/nodehealthcheck/nhc-controller/test/controlplane"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var (
	cluster *controlplane.ControlPlane
	// fw offers the node, template and NodeHealthCheck helpers.
	fw            *framework.Env
	nhcClient     versioned.Interface
	dynamicClient dynamic.Interface
	kubeClient    kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	cluster, err = controlplane.Start("manifests/crd", "test/crds/remediators")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cluster.Stop() }()
	if fw, err = framework.NewEnv(cluster); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	nhcClient, dynamicClient, kubeClient = fw.NHC, fw.Dynamic, fw.Kube
	return m.Run()
}
