// Package mdtable reads the tables of a Markdown document, for the
// packages that hold a document's table to the code ([envdoc], the
// environment variables; [metricsdoc], the metrics and alerts).
//
// A table is a run of lines that start with "|" (after white space): the
// first is its header, the second its delimiter row (only "-", ":" and
// spaces between the bars), the others its body rows. A cell is the text
// between two bars, trimmed; "\|" is a "|" inside a cell.
//
// [Scan] hands every line of a document to a function, with the cells and
// the table's header when the line is a body row.
//
// [envdoc]: github.com/nrinet/nrinet/internal/envdoc
// [metricsdoc]: github.com/nrinet/nrinet/internal/metricsdoc
package mdtable
