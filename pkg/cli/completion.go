package cli

import (
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completeNHCNames completes a NodeHealthCheck's name from the cluster.
func (o *Options) completeNHCNames(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.cluster()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	list, err := c.nhcs.RemediationV1alpha1().NodeHealthChecks().List(cmd.Context(), metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]cobra.Completion, 0, len(list.Items))
	for _, nhc := range list.Items {
		names = append(names, nhc.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeNodeNames completes a node's name from the cluster.
func (o *Options) completeNodeNames(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.cluster()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	list, err := c.kube.CoreV1().Nodes().List(cmd.Context(), metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]cobra.Completion, 0, len(list.Items))
	for _, node := range list.Items {
		names = append(names, node.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
