package serving

import (
	"errors"

	"github.com/spf13/pflag"
)

// DefaultConfig serves the metrics over HTTPS on :8443 and the probes on
// :8081.
func DefaultConfig() Config {
	return Config{MetricsAddress: ":8443", MetricsTLS: true, ProbeAddress: ":8081"}
}

// AddFlags registers the ports' flags.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.MetricsAddress, "metrics-bind-address", c.MetricsAddress, "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.BoolVar(&c.MetricsTLS, "metrics-secure", c.MetricsTLS, "Serve /metrics over HTTPS to callers that a TokenReview authenticates and a SubjectAccessReview allows GET /metrics (ClusterRole nhc-controller-metrics-reader). false serves plain HTTP to anyone: only behind a network policy.")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "Certificate of the HTTPS metrics server; without it a self-signed one is made at start.")
	fs.StringVar(&c.TLSKeyFile, "tls-private-key-file", c.TLSKeyFile, "Private key of --tls-cert-file.")
	fs.BoolVar(&c.Profiling, "profiling", c.Profiling, "Serve Go's pprof profiles under /debug/pprof/ on the metrics address, to callers allowed GET on that non-resource URL when --metrics-secure.")
	fs.StringVar(&c.ProbeAddress, "health-probe-bind-address", c.ProbeAddress, "Address of /healthz and /readyz; 0 disables them.")
}

// Validate checks that the certificate comes with its key.
func (c *Config) Validate() error {
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	return nil
}
