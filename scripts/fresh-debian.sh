#!/usr/bin/env bash
# Runs a command from this checkout on a fresh Debian 12 root (debootstrap, minbase variant):
# nothing installed by hand on this machine can hide a missing install step. The pristine root
# is cached as a tarball between runs. Needs root and debootstrap (installed when missing).
#   scripts/fresh-debian.sh 'scripts/run-tests.sh'
# The command runs on the committed tree (git archive HEAD), as a fresh clone would have it.
set -uo pipefail
cmd=${1:?usage: fresh-debian.sh 'COMMAND'}
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${FRESH_DEBIAN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/strider-fresh-debian}
base=$cache/bookworm-minbase.tgz
mkdir -p "$cache"
if [ "$(id -u)" -ne 0 ]; then echo "fresh-debian.sh: needs root (chroot and mounts)"; exit 2; fi
if [ ! -f "$base" ]; then
  command -v debootstrap > /dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap > /dev/null; }
  mirror=$(sed -n 's/^URIs: //p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  mirror=${mirror:-$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null)}
  tmp=$(mktemp -d)
  echo "fresh-debian.sh: creating a Debian 12 minbase root (cached in $base)"
  if ! debootstrap --variant=minbase bookworm "$tmp" ${mirror:+"$mirror"} > "$cache/debootstrap.log" 2>&1; then
    echo "fresh-debian.sh: debootstrap failed; see $cache/debootstrap.log"; tail -5 "$cache/debootstrap.log"
    rm -rf --one-file-system "$tmp"; exit 3
  fi
  tar -C "$tmp" -czf "$base.part" . && mv "$base.part" "$base"
  rm -rf --one-file-system "$tmp"
fi
root=$(mktemp -d /tmp/strider-fresh-debian.XXXXXX)
cleanup() {
  # The root's bind takes everything mounted under it along (proc, sys, dev, and what the tests
  # mounted inside, such as ip netns' /run/netns); sys and dev are slaves, so the host keeps its own.
  umount -R "$root" 2>/dev/null
  for m in dev/shm dev sys proc; do umount -R "$root/$m" 2>/dev/null || umount -l "$root/$m" 2>/dev/null; done
  # Never delete through a mount that is still attached (it would be the host's /dev or /sys).
  if grep -q " $root[/ ]" /proc/mounts; then echo "fresh-debian.sh: mounts remain under $root; not removing it"
  else rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT
tar -C "$root" -xzf "$base"
# An installed system's / is a mount point with mode 755. mktemp -d makes 700, under which no
# other user can run a program (munge's set-up runs one as its own user), and `ip netns` (the
# emulated hosts) needs / to be a mount point.
chmod 755 "$root"
mount --bind "$root" "$root"
mount --make-private "$root"  # what is mounted inside (netns files) stays off the host's tree
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
# Unmounts under them must not propagate back to the host's own /sys and /dev.
mount --make-rslave "$root/sys"
mount --make-rslave "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
# debootstrap writes no /etc/hosts; Debian's installer (and every cloud or container image) does.
# Without one, each MPI start-up's hwloc asks DNS for "localhost" once per X display it probes
# (5 s a process here), which no installed machine pays.
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" > "$root/etc/hosts"
mkdir -p "$root/src/strider"
git -C "$here" archive --format=tar HEAD | tar -C "$root/src/strider" -xf -
start=$(date +%s)
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CI=true \
  LANG=C.UTF-8 /bin/bash -c "cd /src/strider && $cmd" < /dev/null
rc=$?
echo "fresh Debian 12 root: '$cmd' exited $rc after $(( $(date +%s) - start )) s"
exit $rc
