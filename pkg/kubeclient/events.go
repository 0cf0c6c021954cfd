package kubeclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventSink records the events of client-go's event broadcaster
// (record.EventSink) in each event's own namespace, as the typed clients'
// EventSinkImpl does.
type EventSink struct {
	Clients *Clients
}

// Create creates an event.
func (s EventSink) Create(event *corev1.Event) (*corev1.Event, error) {
	return s.Clients.Events(event.Namespace).Create(context.Background(), event, metav1.CreateOptions{})
}

// Update updates an event.
func (s EventSink) Update(event *corev1.Event) (*corev1.Event, error) {
	return s.Clients.Events(event.Namespace).Update(context.Background(), event, metav1.UpdateOptions{})
}

// Patch patches an event: the correlator counts a repeated event up.
func (s EventSink) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.Clients.Events(event.Namespace).Patch(context.Background(), event.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
