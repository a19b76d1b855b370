package schema

import (
	"errors"
	"reflect"
	"text/template"

	"github.com/grafana/grafana-foundation-sdk/go/expr"
)

// alertTemplateFuncs are the functions Grafana's alert rule templates
// (labels and annotations) offer: Prometheus' template functions.
var alertTemplateFuncs = func() template.FuncMap {
	fm := template.FuncMap{}
	for _, name := range []string{"args", "externalURL", "first", "graphLink", "humanize", "humanize1024",
		"humanizeDuration", "humanizePercentage", "humanizeTimestamp", "label", "match", "parseDuration",
		"pathPrefix", "query", "reReplaceAll", "safeHtml", "sortByLabel", "strvalue", "stripDomain",
		"stripPort", "tableLink", "title", "toLower", "toTime", "toUpper", "value"} {
		fm[name] = func(...any) any { return nil }
	}
	return fm
}()

// alertTemplatePrefix defines the variables Grafana defines before a rule's
// template.
const alertTemplatePrefix = "{{- $labels := .Labels -}}{{- $values := .Values -}}{{- $value := .Value -}}"

// checkAlertTemplate parses a label or annotation value as Grafana does.
func checkAlertTemplate(ps *problems, where, text string) {
	if _, err := template.New("").Funcs(alertTemplateFuncs).Parse(alertTemplatePrefix + text); err != nil {
		ps.add(where, "does not parse as an alert template: %v", err)
	}
}

func typeOf(v any) reflect.Type { return reflect.TypeOf(v) }

type (
	exprMath      = expr.TypeMath
	exprReduce    = expr.TypeReduce
	exprResample  = expr.TypeResample
	exprThreshold = expr.TypeThreshold
	exprClassic   = expr.TypeClassicConditions
)

// decodeExpr decodes a server-side expression strictly into the SDK's
// schema of its type.
func decodeExpr(typ string, raw []byte) (any, error) {
	var (
		v   any
		err error
	)
	switch typ {
	case "math":
		e := &exprMath{}
		v, err = e, e.UnmarshalJSONStrict(raw)
	case "reduce":
		e := &exprReduce{}
		v, err = e, e.UnmarshalJSONStrict(raw)
	case "resample":
		e := &exprResample{}
		v, err = e, e.UnmarshalJSONStrict(raw)
	case "threshold":
		e := &exprThreshold{}
		v, err = e, e.UnmarshalJSONStrict(raw)
	case "classic_conditions":
		e := &exprClassic{}
		v, err = e, e.UnmarshalJSONStrict(raw)
	case "":
		return nil, errors.New("type: missing (math, reduce, resample, threshold or classic_conditions)")
	default:
		return nil, errors.New("type: " + quote(typ) + " is not an expression type Grafana 10 to 13 all have (math, reduce, resample, threshold, classic_conditions)")
	}
	if err = sdkErr(err); err != nil {
		return nil, err
	}
	return v, nil
}
