// promrules validates Prometheus rule files with Prometheus' own parser (model/rulefmt: YAML
// structure, alert/record names, labels, annotation templates, and every expression through the
// PromQL parser) — what `promtool check rules` does. With -metrics it also prints, one per line,
// every metric name the expressions select, for the check that the code exports them.
//
//	promrules [-metrics] file...
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	printMetrics := flag.Bool("metrics", false, "print the metric names the rules select")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: promrules [-metrics] file...")
		os.Exit(2)
	}
	names := map[string]bool{}
	failed := false
	for _, file := range flag.Args() {
		groups, errs := rulefmt.ParseFile(file, false, model.UTF8Validation)
		if len(errs) > 0 {
			failed = true
			for _, err := range errs {
				fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
			}
			continue
		}
		count := 0
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				count++
				expr, err := parser.ParseExpr(r.Expr)
				if err != nil {
					failed = true
					fmt.Fprintf(os.Stderr, "%s: %s: %v\n", file, r.Alert, err)
					continue
				}
				for _, sel := range parser.ExtractSelectors(expr) {
					for _, m := range sel {
						if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
							names[m.Value] = true
						}
					}
				}
			}
		}
		if !*printMetrics {
			fmt.Printf("%s: SUCCESS: %d rules found\n", file, count)
		}
	}
	if *printMetrics {
		sorted := make([]string, 0, len(names))
		for n := range names {
			sorted = append(sorted, n)
		}
		sort.Strings(sorted)
		for _, n := range sorted {
			fmt.Println(n)
		}
	}
	if failed {
		os.Exit(1)
	}
}
