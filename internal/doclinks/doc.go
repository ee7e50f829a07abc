// Package doclinks checks the relative links of the repository's
// Markdown: every link to a file of the repository names one that
// exists, and every #anchor, in the same page or another, names a
// heading of that page, as GitHub derives a heading's anchor. Its test,
// TestRepository, runs [Check] over every Markdown file git knows (tracked,
// or untracked but not ignored), so that moving or renaming a page or a
// heading without its links fails make test.
//
// # Sections
//
//   - [Links] reads the links of one page, outside code blocks and code
//     spans; [Anchors] the anchors of its headings; [Slug] is GitHub's
//     anchor of one heading.
//   - [Check] resolves each page's links against the files under a root
//     and returns one [BrokenLink] per link that does not resolve.
//   - [Files] lists the Markdown files git knows under a root.
package doclinks
