package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completeNHCNames completes a NodeHealthCheck's name from the cluster.
func (o *Options) completeNHCNames(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return o.completeName(cmd.Context(), args, func(ctx context.Context, c *cluster) ([]string, error) {
		list, err := c.nhcs.RemediationV1alpha1().NodeHealthChecks().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(list.Items))
		for _, nhc := range list.Items {
			names = append(names, nhc.Name)
		}
		return names, nil
	})
}

// completeNodeNames completes a node's name from the cluster.
func (o *Options) completeNodeNames(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return o.completeName(cmd.Context(), args, func(ctx context.Context, c *cluster) ([]string, error) {
		list, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(list.Items))
		for _, node := range list.Items {
			names = append(names, node.Name)
		}
		return names, nil
	})
}

// completeNodeFlag completes --node from the cluster's nodes.
func (o *Options) completeNodeFlag(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return o.completeNodeNames(cmd, nil, toComplete)
}

// completeOutput completes -o: the formats, without a space after one that
// takes a template (jsonpath=, custom-columns=).
func completeOutput(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var formats []cobra.Completion
	templates := 0
	for _, f := range outputFormats {
		if strings.HasPrefix(f, toComplete) {
			formats = append(formats, f)
			if strings.HasSuffix(f, "=") {
				templates++
			}
		}
	}
	if templates > 0 && templates == len(formats) {
		return formats, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	return formats, cobra.ShellCompDirectiveNoFileComp
}

// completeName completes the one name argument with the names list reads.
func (o *Options) completeName(ctx context.Context, args []string, list func(context.Context, *cluster) ([]string, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names, err := list(ctx, c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
