package kinds

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// A list asks for listPage objects at a time from the API server's storage
// and keeps each page's objects before it asks for the next, so that no
// more than a page of whole objects is held: every object but ours is a
// shell by then.
func TestAListKeepsEachPageBeforeTheNext(t *testing.T) {
	const count = 2*listPage + 7
	resource := &pagedResource{count: count}
	var kept []int
	keep := func(obj any) (any, error) {
		kept = append(kept, len(resource.asked))
		return shellOf(obj.(*unstructured.Unstructured)), nil
	}

	list, err := listInPages(t.Context(), resource, metav1.ListOptions{ResourceVersion: "0"}, keep)
	require.NoError(t, err)
	require.Len(t, resource.asked, 3)
	for i, options := range resource.asked {
		assert.Equal(t, int64(listPage), options.Limit, "page %d", i)
		assert.Empty(t, options.ResourceVersion, "page %d: from storage, which pages", i)
	}
	items := list.(*unstructured.UnstructuredList).Items
	require.Len(t, items, count)
	assert.NotContains(t, items[0].Object, "spec", "kept as a shell")
	assert.Equal(t, "42", list.(*unstructured.UnstructuredList).GetResourceVersion())
	assert.Equal(t, 1, kept[0])
	assert.Equal(t, 1, kept[listPage-1], "the first page kept before the second was asked for")
	assert.Equal(t, 3, kept[count-1])
}

// pagedResource serves count objects of a kind not ours in the pages asked
// for, as an API server's storage does (the fake dynamic client drops a
// list's limit and continue).
type pagedResource struct {
	dynamic.ResourceInterface
	count int
	asked []metav1.ListOptions
}

func (r *pagedResource) List(_ context.Context, options metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	r.asked = append(r.asked, options)
	from, _ := strconv.Atoi(options.Continue)
	page := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "test.medik8s.io/v1alpha1", "kind": "TestRemediationList"}}
	for i := from; i < min(from+int(options.Limit), r.count); i++ {
		u := unstructured.Unstructured{}
		u.SetAPIVersion("test.medik8s.io/v1alpha1")
		u.SetKind("TestRemediation")
		u.SetNamespace("elsewhere")
		u.SetName(fmt.Sprintf("unowned-%03d", i))
		u.Object["spec"] = map[string]any{"payload": "large"}
		page.Items = append(page.Items, u)
	}
	if next := from + int(options.Limit); next < r.count {
		page.SetContinue(strconv.Itoa(next))
	}
	page.SetResourceVersion("42")
	return page, nil
}
