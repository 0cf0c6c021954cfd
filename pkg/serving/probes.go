package serving

import "net/http"

// ProbesHandler serves the kubelet's probes: /healthz answers 500 while
// healthy fails, /readyz 503 while ready fails, each with the check's
// error; otherwise "ok".
func ProbesHandler(healthy, ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", probe(healthy, http.StatusInternalServerError))
	mux.Handle("/readyz", probe(ready, http.StatusServiceUnavailable))
	return mux
}

func probe(check func() error, failed int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if err := check(); err != nil {
			http.Error(w, err.Error(), failed)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}
}
