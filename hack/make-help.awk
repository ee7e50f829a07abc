# hack/make-help.awk: what make help prints, read from the Makefile. A
# line "## [group] text" right above a rule's line describes its target:
#
#   ## [test] the tests CI runs
#   test: deps lint unit
#
# Prints the described targets by group, in the order of the groups
# below, each group's in the Makefile's order, one line each. A "##" line
# that is not of that form, is not right above a rule of one target, or
# names no group below, is an error (exit status 1), so that the list
# cannot drift from the Makefile. internal/makehelp checks that every
# target is in it.
#
# A versions file (internal/pins/versions.env) given before the Makefile
# is read first, and "$(KEY)" in a text is its KEY's version there (any
# other "$(...)" is left as written):
#
#   awk -f hack/make-help.awk internal/pins/versions.env Makefile
BEGIN {
	ngroups = split("build test cluster bench release dev helper", order, " ")
	title["build"] = "Build and install"
	title["test"] = "Test suites"
	title["cluster"] = "Runtime and cluster suites (root; they build containerd, CRI-O or Kubernetes)"
	title["bench"] = "Benchmarks"
	title["release"] = "Release"
	title["dev"] = "Development"
	title["helper"] = "Run by other targets"
	width = 0
	failed = 0
}

function fail(msg) {
	printf "make help: %s line %d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
	failed = 1
}

FILENAME ~ /versions\.env$/ {
	if ($0 ~ /^[A-Z0-9_]+=/) {
		key = $0
		sub(/=.*/, "", key)
		version[key] = substr($0, length(key) + 2)
	}
	next
}

pending {
	pending = 0
	if ($0 !~ /^[A-Za-z0-9][A-Za-z0-9_.-]*:/ || $0 ~ /^[^:]*:[:=]/) {
		fail("the line below a \"## [group]\" line must be a rule of one target")
		next
	}
	target = $0
	sub(/:.*/, "", target)
	n[group]++
	targets[group, n[group]] = target
	texts[group, n[group]] = text
	if (length(target) > width) {
		width = length(target)
	}
}

/^##/ {
	if ($0 !~ /^## \[[a-z]+\] [^ ]/) {
		fail("want \"## [group] text\"")
		next
	}
	group = $2
	gsub(/[\[\]]/, "", group)
	if (!(group in title)) {
		fail("no group " group)
		next
	}
	text = $0
	sub(/^## \[[a-z]+\] /, "", text)
	for (key in version) {
		gsub("\\$\\(" key "\\)", version[key], text)
	}
	pending = 1
}

END {
	if (pending) {
		fail("a \"## [group]\" line ends the file")
	}
	if (failed) {
		exit 1
	}
	printf "make <target> (make alone runs test); variables as make VAR=value:\n"
	format = "  %-" width "s  %s\n"
	for (g = 1; g <= ngroups; g++) {
		name = order[g]
		if (!n[name]) {
			continue
		}
		printf "\n%s\n", title[name]
		for (i = 1; i <= n[name]; i++) {
			printf format, targets[name, i], texts[name, i]
		}
	}
}
