// Package ha proves that crashes and leader changes never duplicate or lose
// a remediation. It starts its own controller processes, so it has its own
// control plane.
package ha

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodehealthcheck/nhc-controller/pkg/remediation/nodeleases"
	"github.com/nodehealthcheck/nhc-controller/test/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	if spec := os.Getenv(attackersEnv); spec != "" {
		os.Exit(runAttackers(spec))
	}
	var err error
	env, err = framework.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The controllers here run with limited rights, as in a cluster: the
	// node lease namespace exists, as another medik8s operator (or the
	// installed controller, at its first lease) would have made it.
	if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodeleases.DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	env.Stop()
	os.Exit(code)
}
