package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A packaged chart stamped twice, from archives written at different
// moments, is the same bytes, every time the commit's, every file kept.
func TestStampArchive(t *testing.T) {
	at := time.Date(2026, 11, 27, 15, 30, 12, 0, time.UTC)
	var stamped [][]byte
	for _, written := range []time.Time{time.Now(), time.Now().Add(time.Hour)} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Comment, zw.ModTime = "Helm", written
		tw := tar.NewWriter(zw)
		for _, name := range []string{"nhc-controller/Chart.yaml", "nhc-controller/values.yaml"} {
			require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(name)), ModTime: written, Typeflag: tar.TypeReg}))
			_, err := tw.Write([]byte(name))
			require.NoError(t, err)
		}
		require.NoError(t, tw.Close())
		require.NoError(t, zw.Close())
		path := filepath.Join(t.TempDir(), "chart.tgz")
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
		require.NoError(t, stampArchive(path, at))
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		stamped = append(stamped, data)
	}
	assert.Equal(t, stamped[0], stamped[1])
	zr, err := gzip.NewReader(bytes.NewReader(stamped[0]))
	require.NoError(t, err)
	assert.Equal(t, "Helm", zr.Comment)
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		assert.True(t, at.Equal(h.ModTime), h.Name)
		content, err := io.ReadAll(tr)
		require.NoError(t, err)
		assert.Equal(t, h.Name, string(content))
		names = append(names, h.Name)
	}
	assert.Equal(t, []string{"nhc-controller/Chart.yaml", "nhc-controller/values.yaml"}, names)
}
