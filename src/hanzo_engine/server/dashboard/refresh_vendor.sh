#!/usr/bin/env bash
# Refresh the dashboard's vendored front-end libraries (static/vendor/) from the npm registry.
#
# The versions are pinned here; change one and run this script to update the files, VERSIONS and the
# license texts. Needs `npm` and `node`; nothing is built, the packages' own dist files are copied.
#
# instant-meilisearch 0.30.0 is the newest release that ships a UMD build (0.31 is ES-module only);
# its UMD build expects the `meilisearch` JS client as a global, so that client's UMD build is
# vendored too, at the version instant-meilisearch 0.30.0 depends on.
set -euo pipefail

MEILISEARCH_JS=0.54.0
INSTANT_MEILISEARCH=0.30.0
INSTANTSEARCH_JS=4.118.1
INSTANTSEARCH_CSS=8.23.0

here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/static/vendor"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# package spec | file inside the package | vendored name
FILES=(
  "meilisearch@$MEILISEARCH_JS|dist/umd/index.min.js|meilisearch.umd.min.js"
  "@meilisearch/instant-meilisearch@$INSTANT_MEILISEARCH|dist/umd/index.min.js|instant-meilisearch.umd.min.js"
  "instantsearch.js@$INSTANTSEARCH_JS|dist/instantsearch.production.min.js|instantsearch.production.min.js"
  "instantsearch.css@$INSTANTSEARCH_CSS|themes/satellite-min.css|satellite-min.css"
)

mkdir -p "$dest"
rm -f "$dest"/*
{
  echo "# Vendored front-end libraries of the dashboard; refreshed by ../../refresh_vendor.sh, do not edit."
  echo "# file | npm package | version | license | sha256 of the file | npm integrity of the package"
} > "$tmp/VERSIONS"

for entry in "${FILES[@]}"; do
  IFS='|' read -r spec inner name <<<"$entry"
  pkg="${spec%@*}"
  version="${spec##*@}"
  work="$tmp/$(echo "$pkg" | tr '/@' '__')"
  mkdir -p "$work"
  (cd "$work" && npm pack --silent --json "$spec" > pack.json)
  tarball="$work/$(node -p "require('$work/pack.json')[0].filename")"
  integrity="$(node -p "require('$work/pack.json')[0].integrity")"
  tar xzf "$tarball" -C "$work"
  license="$(node -p "require('$work/package/package.json').license")"
  got="$(node -p "require('$work/package/package.json').version")"
  [ "$got" = "$version" ] || { echo "asked $spec, npm gave $got" >&2; exit 1; }
  cp "$work/package/$inner" "$dest/$name"
  # strip the trailing source-map comment: the maps are not vendored
  sed -i -e 's|//# sourceMappingURL=[^ ]*$||' -e 's|/\*# sourceMappingURL=[^ ]* \*/$||' "$dest/$name"
  cp "$work/package/LICENSE" "$dest/LICENSE.$(echo "$pkg" | tr '/@' '-_' | sed 's/^_//')"
  sha="$(sha256sum "$dest/$name" | cut -d' ' -f1)"
  echo "$name | $pkg | $version | $license | $sha | $integrity" >> "$tmp/VERSIONS"
done
cp "$tmp/VERSIONS" "$dest/VERSIONS"
echo "vendored into $dest:"
cat "$dest/VERSIONS"
