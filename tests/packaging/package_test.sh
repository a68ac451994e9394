#!/usr/bin/env bash
# package_test.sh BUILD_DIR VERSION: builds treefarm_VERSION_amd64.deb with CPack, checks
# its control data (dependencies declared by dpkg-shlibdeps), installs it with dpkg into a
# fresh root, checks the installed files (man pages, completion, systemd unit), and runs
# a shortened quickstart with the installed binaries. Exit 77 = skipped.
set -euo pipefail
build="$1"; version="$2"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (dpkg --root installs as root)"; exit 77; fi
for tool in cpack dpkg dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool missing (apt-get install dpkg-dev)"; exit 77; }
done
work="$(mktemp -d /tmp/treefarm-package-test-XXXXXX)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. Build the package from this build tree (binaries and man pages already built).
for page in treefarm treefarm-master treefarm-worker; do
  [ -f "$build/packaging/man/$page.1.gz" ] || fail "$build/packaging/man/$page.1.gz missing (build target treefarm_man)"
done
(cd "$build" && cpack -G DEB -B "$work/cpack" -D CPACK_OUTPUT_FILE_PREFIX="$work/cpack" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack failed"; }
deb="$work/cpack/treefarm_${version}_amd64.deb"
[ -f "$deb" ] || { ls -R "$work/cpack"; fail "no $deb"; }
echo "built $(basename "$deb"): $(du -k "$deb" | cut -f1) KiB"

# 2. Control data: name, version, and the shared libraries' packages declared.
control="$(dpkg-deb -f "$deb")"
echo "$control"
grep -qx "Package: treefarm" <<<"$control" || fail "Package field"
grep -qx "Version: $version" <<<"$control" || fail "Version field"
depends="$(dpkg-deb -f "$deb" Depends)"
for lib in libzmq5 libtbb12 libhwloc15 libc6 libstdc++6; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
# Every declared dependency is a package installed here, or provided by one (virtual
# packages such as libspdlog1.10-fmt9), so that the run below is a real check.
provided="$(dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Provides}\n' | awk '$1 == "ii" {$1 = ""; print}' | tr ',' ' ')"
for dep in $(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/|.*//' | tr -d ' '); do
  grep -qw -- "$dep" <<<"$provided" || fail "dependency $dep is neither installed nor provided here"
done

# 3. Install into a fresh root with dpkg (its own database; the libraries are this system's).
root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
dpkg --root="$root" --force-depends --force-script-chrootless --log=/dev/null -i "$deb" >"$work/dpkg.log" 2>&1 \
  || { cat "$work/dpkg.log"; fail "dpkg -i"; }
dpkg --root="$root" -s treefarm | grep -q "Status: install ok installed" || fail "dpkg does not list treefarm as installed"
# The lab (treefarm-lab: research studies, peer benchmarks) is built but never packaged.
[ -x "$build/bin/treefarm-lab" ] || fail "$build/bin/treefarm-lab missing: the check below would prove nothing"
if dpkg-deb -c "$deb" | grep -q 'treefarm-lab'; then
  dpkg-deb -c "$deb" | grep 'treefarm-lab'; fail "the package contains treefarm-lab"
fi
for f in usr/bin/treefarm usr/bin/treefarm-master usr/bin/treefarm-worker \
         usr/share/man/man1/treefarm.1.gz usr/share/man/man1/treefarm-master.1.gz usr/share/man/man1/treefarm-worker.1.gz \
         usr/share/bash-completion/completions/treefarm usr/share/bash-completion/completions/treefarm-worker \
         usr/lib/systemd/system/treefarm-worker@.service usr/share/doc/treefarm/examples/quickstart.toml \
         usr/share/doc/treefarm/install.md; do
  [ -e "$root/$f" ] || fail "$f not installed"
done
# The man pages carry the programs' real options.
zcat "$root/usr/share/man/man1/treefarm-worker.1.gz" | grep -q -- 'parent' || fail "treefarm-worker.1 lacks --parent"
zcat "$root/usr/share/man/man1/treefarm-master.1.gz" | grep -q -- 'wait\\-workers\|wait-workers' || fail "treefarm-master.1 lacks --wait-workers"
# The completion offers the subcommands and a subcommand's options.
compl="$(PATH="$root/usr/bin:$PATH" bash -c "source '$root/usr/share/bash-completion/completions/treefarm'
  COMP_WORDS=(treefarm ru); COMP_CWORD=1; _treefarm; echo \"\${COMPREPLY[*]}\"
  COMP_WORDS=(treefarm run --cal); COMP_CWORD=2; _treefarm; echo \"\${COMPREPLY[*]}\"")"
grep -qx "run" <<<"$(head -1 <<<"$compl")" || fail "completion of 'treefarm ru': $compl"
grep -q -- "--calibrate" <<<"$(tail -1 <<<"$compl")" || fail "completion of 'treefarm run --cal': $compl"

# 4. --version everywhere, from the installed binaries.
for prog in treefarm treefarm-master treefarm-worker; do
  out="$("$root/usr/bin/$prog" --version)"
  grep -q "$version" <<<"$out" || fail "$prog --version says '$out'"
done

# 5. The quickstart from the installed binaries and examples (fewer tasks, to stay short).
# Its two applications, mm then ma, whatever their sizes in the file: 200 and 400 tasks.
awk '/^tasks = [0-9]+$/ { n++; print "tasks = " (n == 1 ? 200 : 400); next } { print }' \
  "$root/usr/share/doc/treefarm/examples/quickstart.toml" >"$work/quickstart.toml"
"$root/usr/bin/treefarm" run "$work/quickstart.toml" --out "$work/out" --timeout 90 >"$work/run.log" 2>&1 \
  || { cat "$work/run.log"; fail "quickstart from the installed binaries"; }
cat "$work/run.log" | tail -8
grep -q '"completed": 200' "$work/out/results.json" || fail "mm: not 200 completed"
grep -q '"completed": 400' "$work/out/results.json" || fail "ma: not 400 completed"

# 6. dpkg removes every file it installed.
dpkg --root="$root" --force-depends --force-script-chrootless --log=/dev/null -r treefarm >/dev/null 2>&1 || fail "dpkg -r"
[ ! -e "$root/usr/bin/treefarm" ] || fail "dpkg -r left usr/bin/treefarm"
echo "PASS"
