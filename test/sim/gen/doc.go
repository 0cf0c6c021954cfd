// Package gen is what a history is and how one is drawn and shrunk:
// History and its Steps (history.go), the generator that draws a seed's
// history, with a Focus that weights it towards some features meeting
// (generate.go), the nodes it relabels and brings back, by chance or as
// an operator does while remediators hold their resources (relabel.go),
// and Shrink, which drops steps and time from a history that breaks an
// invariant while it still does (shrink.go). It plays nothing: package
// sim plays histories, and hands Shrink the play.
package gen
