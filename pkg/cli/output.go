package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// Output formats besides the default table, as kubectl get takes them.
const (
	outputWide          = "wide"
	outputJSON          = "json"
	outputYAML          = "yaml"
	outputName          = "name"
	outputJSONPath      = "jsonpath"
	outputCustomColumns = "custom-columns"
)

// outputFormats are what -o completes to; "=" ones take a template.
var outputFormats = []string{outputWide, outputJSON, outputYAML, outputName, "jsonpath=", "jsonpath-as-json=", "jsonpath-file=", "custom-columns="}

// ReportAPIVersion is the apiVersion of kubectl nhc's reports: they are no
// object of the cluster's, but a script tells them apart by their kind.
const ReportAPIVersion = "kubectl-nhc.nodehealthcheck.io/v1alpha1"

// ErrIncomplete is returned when a report was printed without what the
// warnings name: a script must not take its verdict as whole. The plugin
// exits 3 then.
var ErrIncomplete = errors.New("the report is incomplete: kubectl nhc could not read what the warnings above name")

// ReportMeta begins every report.
type ReportMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Warnings name what could not be read: the verdicts went without it.
	Warnings []string `json:"warnings,omitempty"`
}

// report is a command's output in every format: its rows are what -o
// name and -o custom-columns print a line of each.
type report interface {
	meta() *ReportMeta
	// rows is the field of the rows in the report's JSON.
	rows() string
	// names are the objects of its rows, for -o name.
	names() []named
}

// named is an object of the cluster a row is about.
type named struct {
	apiVersion, kind, name string
}

var (
	nodeHealthCheckKind = func(name string) named { return named{"remediation.medik8s.io/v1alpha1", "NodeHealthCheck", name} }
	nodeKind            = func(name string) named { return named{"v1", "Node", name} }
)

// checkOutput refuses an output format before anything is read.
func (o *Options) checkOutput() error {
	format, _, _ := strings.Cut(o.output, "=")
	switch format {
	case "", outputWide, outputJSON, outputYAML, outputName:
		return nil
	case outputCustomColumns:
		_, err := parseColumns(strings.TrimPrefix(o.output, outputCustomColumns+"="))
		return err
	}
	_, err := o.jsonPathPrinter()
	return err
}

func (o *Options) jsonPathPrinter() (printers.ResourcePrinter, error) {
	p, err := genericclioptions.NewJSONPathPrintFlags("", true).ToPrinter(o.output)
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return nil, fmt.Errorf("unknown output format %q: use wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=SPEC", o.output)
	}
	return p, err
}

// print writes a report in the output format, then says what could not be
// read, on standard error and, in JSON and YAML, in the report; then it
// returns ErrIncomplete.
func (o *Options) print(r report, kind string, c *cluster, table func(w io.Writer, wide, headers bool)) error {
	m := r.meta()
	m.APIVersion, m.Kind, m.Warnings = ReportAPIVersion, kind, c.warnings
	if err := o.write(r, table); err != nil {
		return err
	}
	warnings := printers.NewWarningPrinter(o.ErrOut, printers.WarningPrinterOptions{})
	for _, w := range c.warnings {
		warnings.Print(w)
	}
	if len(c.warnings) > 0 {
		return ErrIncomplete
	}
	return nil
}

func (o *Options) write(r report, table func(w io.Writer, wide, headers bool)) error {
	format, spec, _ := strings.Cut(o.output, "=")
	switch format {
	case outputJSON:
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(data))
		return err
	case outputYAML:
		data, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(data)
		return err
	case outputName:
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
		for _, n := range r.names() {
			list.Items = append(list.Items, unstructured.Unstructured{Object: map[string]any{"apiVersion": n.apiVersion, "kind": n.kind, "metadata": map[string]any{"name": n.name}}})
		}
		if len(list.Items) == 0 {
			return nil
		}
		return (&printers.NamePrinter{}).PrintObj(list, o.Out)
	case outputCustomColumns:
		content, err := unstructuredReport(r)
		if err != nil {
			return err
		}
		rows, _ := content[r.rows()].([]any)
		return printColumns(o.Out, spec, rows, !o.noHeaders)
	case "", outputWide:
		// kubectl's spacing; unlike kubectl's writer, which remembers
		// widths across flushes, each table gets its own column widths.
		w := tabwriter.NewWriter(o.Out, 6, 4, 3, ' ', 0)
		table(w, o.output == outputWide, !o.noHeaders)
		return w.Flush()
	}
	p, err := o.jsonPathPrinter()
	if err != nil {
		return err
	}
	content, err := unstructuredReport(r)
	if err != nil {
		return err
	}
	return p.PrintObj(&unstructured.Unstructured{Object: content}, o.Out)
}

// unstructuredReport is a report as its JSON reads.
func unstructuredReport(r report) (map[string]any, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var content map[string]any
	err = json.Unmarshal(data, &content)
	return content, err
}

// column is one of -o custom-columns: its header and its JSONPath.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// parseColumns reads a custom-columns spec as kubectl does:
// NAME:.name,HEALTHY:.healthy; a path in braces or without.
func parseColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, errors.New("custom-columns needs a spec: -o custom-columns=NAME:.name,HEALTHY:.healthy")
	}
	var columns []column
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok || header == "" || path == "" {
			return nil, fmt.Errorf("custom-columns: %q is not HEADER:PATH", part)
		}
		if !strings.HasPrefix(path, "{") {
			path = "{" + "." + strings.TrimPrefix(path, ".") + "}"
		}
		p := jsonpath.New(header).AllowMissingKeys(true)
		if err := p.Parse(path); err != nil {
			return nil, fmt.Errorf("custom-columns: %s: %w", header, err)
		}
		columns = append(columns, column{header, p})
	}
	return columns, nil
}

// printColumns prints a line of the columns for each row, "<none>" where
// a path finds nothing, as kubectl does.
func printColumns(out io.Writer, spec string, rows []any, headers bool) error {
	columns, err := parseColumns(spec)
	if err != nil {
		return err
	}
	w := printers.GetNewTabWriter(out)
	if headers {
		names := make([]string, len(columns))
		for i, c := range columns {
			names[i] = c.header
		}
		fmt.Fprintln(w, strings.Join(names, "\t"))
	}
	for _, row := range rows {
		cells := make([]string, len(columns))
		for i, c := range columns {
			results, err := c.path.FindResults(row)
			if err != nil {
				return err
			}
			var values []string
			for _, result := range results {
				for _, v := range result {
					values = append(values, fmt.Sprint(v.Interface()))
				}
			}
			cells[i] = strings.Join(values, ",")
			if len(values) == 0 {
				cells[i] = "<none>"
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return w.Flush()
}
