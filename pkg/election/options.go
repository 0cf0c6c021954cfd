package election

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/nodehealthcheck/nhc-controller/pkg/kubeclient"
)

// inClusterNamespaceFile holds the pod's namespace when running in a cluster.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Options are the leader election's flags.
type Options struct {
	// LeaderElect elects one active replica; without it, this one leads
	// alone.
	LeaderElect bool
	// Namespace is the lease's; "" is the pod's namespace in a cluster,
	// else default.
	Namespace string
	// Name is the lease's.
	Name string
	// LeaseDuration, RenewDeadline and RetryPeriod are Config's.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultOptions elect a leader, with client-go's timings.
func DefaultOptions() Options {
	return Options{
		LeaderElect: true, Name: "nhc-controller.remediation.medik8s.io",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
	}
}

// AddFlags registers the options' flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader among replicas with a Lease; only the leader acts.")
	fs.StringVar(&o.Namespace, "leader-election-namespace", o.Namespace, "Namespace of the leader-election Lease. Defaults to the pod's namespace in a cluster, else default.")
	fs.StringVar(&o.Name, "leader-election-id", o.Name, "Name of the leader-election Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long non-leaders wait before taking over an unrenewed lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader retries renewing before it gives up leading.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the lease.")
}

// Validate checks the timings of an election.
func (o *Options) Validate() error {
	if o.LeaderElect && !(o.RetryPeriod < o.RenewDeadline && o.RenewDeadline < o.LeaseDuration) {
		return errors.New("leader election needs --leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration")
	}
	return nil
}

// Leadership joins the election the options describe, as a candidate named
// after the host and unique among the replicas; without LeaderElect, this
// replica leads alone. ctx is the process's, which SIGTERM ends.
func (o *Options) Leadership(ctx context.Context, config *rest.Config) (*Leadership, error) {
	if !o.LeaderElect {
		return Alone(ctx), nil
	}
	namespace := o.namespace()
	leases, err := leasesOver(config, namespace)
	if err != nil {
		return nil, err
	}
	hostname, _ := os.Hostname()
	return newLeadership(ctx, Config{
		Leases: leases, Namespace: namespace, Name: o.Name, Identity: hostname + "_" + uuid.NewString(),
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
	})
}

// namespace is the lease's: the flag's, else the pod's in a cluster, else
// default.
func (o *Options) namespace() string {
	if o.Namespace != "" {
		return o.Namespace
	}
	if data, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		return strings.TrimSpace(string(data))
	}
	return "default"
}

// leasesOver reaches a namespace's leases over a client with a rate limiter
// of its own, whatever config carries: the lease is renewed every retry
// period, however busy the process's other clients are.
func leasesOver(config *rest.Config, namespace string) (Leases, error) {
	config = rest.CopyConfig(config)
	config.RateLimiter = nil
	c, err := kubeclient.New(config)
	if err != nil {
		return nil, err
	}
	return c.Leases(namespace), nil
}
