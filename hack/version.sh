#!/usr/bin/env bash
# hack/version.sh: print nrinet's version, the one make build, make install,
# make release and make image stamp into the binaries (internal/version, and
# containerd's version package as <its version>+nrinet.<this without the v>).
#
#   v1.2.3                     HEAD is the tag v1.2.3 (a release: git tag -a v1.2.3)
#   v1.2.3-4-g0123456789ab     4 commits after v1.2.3, at commit 0123456789ab
#   v0.0.0-57-g0123456789ab    no v* tag yet: 57 commits since the first, as if
#                              v0.0.0 were tagged before it
#   ...-dirty                  the work tree had changes (tracked files)
#   v0.0.0-devel               not a git checkout, or git missing
#
# It is `git describe --tags --always --dirty --abbrev=12 --match 'v[0-9]*'`,
# with the v0.0.0 form when there is no such tag. The abbreviation is fixed
# at 12 hex digits (as Go's pseudo-versions and internal/version), so that
# two clones of the same commit agree. Every form is a valid semantic
# version, but semver reads what follows the tag as a pre-release, which
# orders v1.2.3-4-g... before v1.2.3; the release's packages, whose order
# dpkg and rpm act on, get a version that orders it after
# (1.2.3+4.g..., hack/release's packageVersion; docs/install.md).
#
# make release VERSION=v1.2.3 builds the release of a tag before the tag
# exists (from the commit to be tagged); every target that stamps takes
# VERSION the same way.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v git >/dev/null || ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo v0.0.0-devel
	exit 0
fi
d=$(git describe --tags --always --dirty --abbrev=12 --match 'v[0-9]*')
case $d in
v[0-9]*)
	echo "$d"
	;;
*)
	# No matching tag: describe printed the abbreviated commit (and -dirty).
	echo "v0.0.0-$(git rev-list --count HEAD)-g$d"
	;;
esac
