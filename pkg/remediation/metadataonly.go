package remediation

import (
	"net/http"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Accept headers that ask the API server for an object's metadata alone,
// as client-go's metadata client asks: a list as PartialObjectMetadataList,
// a watch's objects as PartialObjectMetadata. Plain JSON after them lets a
// server that cannot answer so send whole objects.
const (
	acceptMetadataList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	acceptMetadata     = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)

// NewMetadataOnlyClient returns a dynamic client whose reads ask the API
// server for metadata alone. The informers of template kinds list and
// watch with it (Config.MetadataOnly): a template no NodeHealthCheck names,
// however large, costs the process its metadata, and never crosses the
// wire whole. Its objects are Unstructured, as the dynamic client's are,
// with kind PartialObjectMetadata.
func NewMetadataOnlyClient(config *rest.Config) (dynamic.Interface, error) {
	config = rest.CopyConfig(config)
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return metadataOnly{rt} })
	return dynamic.NewForConfig(config)
}

// metadataOnly sets the Accept header of every read.
type metadataOnly struct{ next http.RoundTripper }

func (m metadataOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return m.next.RoundTrip(req)
	}
	accept := acceptMetadataList
	if watch := req.URL.Query().Get("watch"); watch == "true" || watch == "1" {
		accept = acceptMetadata
	}
	req = req.Clone(req.Context())
	req.Header.Set("Accept", accept)
	return m.next.RoundTrip(req)
}
