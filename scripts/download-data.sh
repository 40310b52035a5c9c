#!/usr/bin/env bash
# scripts/download-data.sh mnist|fashion-mnist|cifar10|cifar100 [ROOT]
# Fetches a dataset's official files into ROOT/<name>/ (default: the first writable data root
# of $RINGGRAD_DATA, ~/.cache/ringgrad/data, /usr/share/datasets), checks their pinned MD5
# sums, and unpacks CIFAR's archives. The readers never download; this is the only path.
set -euo pipefail

usage() {
  echo "usage: scripts/download-data.sh mnist|fashion-mnist|cifar10|cifar100 [ROOT]" >&2
  exit 2
}

# The first data root that exists or can be created, and is writable.
default_root() {
  local candidates=()
  [ -n "${RINGGRAD_DATA:-}" ] && candidates+=("${RINGGRAD_DATA%%:*}")
  [ -n "${HOME:-}" ] && candidates+=("$HOME/.cache/ringgrad/data")
  candidates+=(/usr/share/datasets)
  for root in "${candidates[@]}"; do
    if mkdir -p "$root" 2>/dev/null && [ -w "$root" ]; then
      echo "$root"
      return
    fi
  done
  echo "download-data.sh: no writable data root among: ${candidates[*]}" >&2
  exit 1
}

# fetch URL FILE MD5: downloads unless FILE already has the right sum, then verifies it.
fetch() {
  local url=$1 file=$2 md5=$3
  if [ -f "$file" ] && echo "$md5  $file" | md5sum -c --status; then
    echo "  $file: already present"
    return
  fi
  echo "  $url"
  local ok=0
  if command -v curl >/dev/null; then
    curl -fL --retry 2 --connect-timeout 15 -sS -o "$file.part" "$url" && ok=1
  elif command -v wget >/dev/null; then
    wget -q -T 15 -O "$file.part" "$url" && ok=1
  else
    echo "download-data.sh: neither curl nor wget is installed" >&2
    exit 1
  fi
  if [ "$ok" != 1 ]; then
    rm -f "$file.part"
    cat >&2 <<MSG
download-data.sh: could not download $url
  This machine seems to be offline (or the server refused). On a machine with internet,
  fetch that URL and copy the file to $file
  (expected MD5 $md5), then run this script again to verify and unpack it.
MSG
    exit 1
  fi
  if ! echo "$md5  $file.part" | md5sum -c --status; then
    rm -f "$file.part"
    echo "download-data.sh: $url: MD5 mismatch (expected $md5); file removed" >&2
    exit 1
  fi
  mv "$file.part" "$file"
}

# The four IDX files of an MNIST-style dataset: base URL, then "name md5" pairs.
fetch_idx() {
  local dir=$1 base=$2
  shift 2
  while [ $# -gt 0 ]; do
    fetch "$base/$1" "$dir/$1" "$2"
    shift 2
  done
}

# fetch_cifar DIR URL MD5 SUBDIR FILES...: the tarball, unpacked flat into DIR.
fetch_cifar() {
  local dir=$1 url=$2 md5=$3 subdir=$4
  shift 4
  local tarball
  tarball="$dir/$(basename "$url")"
  fetch "$url" "$tarball" "$md5"
  tar -xzf "$tarball" -C "$dir"
  for f in "$@"; do mv -f "$dir/$subdir/$f" "$dir/$f"; done
  rm -rf "${dir:?}/$subdir"
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
name=$1
case "$name" in mnist | fashion-mnist | cifar10 | cifar100) ;; *) usage ;; esac
root=${2:-$(default_root)}
dir="$root/$name"
mkdir -p "$dir"
echo "download-data.sh: $name -> $dir"

case "$name" in
  mnist)
    fetch_idx "$dir" https://ossci-datasets.s3.amazonaws.com/mnist \
      train-images-idx3-ubyte.gz f68b3c2dcbeaaa9fbdd348bbdeb94873 \
      train-labels-idx1-ubyte.gz d53e105ee54ea40749a09fcbcd1e9432 \
      t10k-images-idx3-ubyte.gz 9fb629c4189551a2d022fa330f9573f3 \
      t10k-labels-idx1-ubyte.gz ec29112dd5afa0611ce80d1b7f02629c
    ;;
  fashion-mnist)
    fetch_idx "$dir" http://fashion-mnist.s3-website.eu-central-1.amazonaws.com \
      train-images-idx3-ubyte.gz 8d4fb7e6c68d591d4c3dfef9ec88bf0d \
      train-labels-idx1-ubyte.gz 25c81989df183df01b3e8a0aad5dffbe \
      t10k-images-idx3-ubyte.gz bef4ecab320f06d8554ea6380940ec79 \
      t10k-labels-idx1-ubyte.gz bb300cfdad3c16e7a12a480ee83cd310
    ;;
  cifar10)
    fetch_cifar "$dir" https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz c32a1d4ab5d03f1284b67883e8d87530 \
      cifar-10-batches-bin data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin \
      test_batch.bin batches.meta.txt
    ;;
  cifar100)
    fetch_cifar "$dir" https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz 03b5dce01913d631647c71ecec9e9cb8 \
      cifar-100-binary train.bin test.bin coarse_label_names.txt fine_label_names.txt
    ;;
esac
echo "download-data.sh: $name ready in $dir"
