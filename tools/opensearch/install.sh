#!/usr/bin/env bash
# Installs the OpenSearch the fleet memory's tests run against, from Maven Central, every file
# checked against the SHA-512 digest pinned below:
# - the minimal distribution (integ-test-zip: the server and its transport module only);
# - the Painless scripting module (lang-painless), assembled from its published jars as the full
#   distribution ships it: the k-NN plugin extends it and will not install without it;
# - the k-NN plugin of the same version (knn_vector fields and knn queries). Its Maven zip holds
#   the Java code only, not the faiss/nmslib native libraries of the full distribution: graphs
#   are not built, and knn queries are answered by the plugin's exact search, in Java, which it
#   uses below index.knn.advanced.approximate_threshold documents per segment anyway;
# - the security plugin of the same version (TLS and basic auth). Maven Central publishes a
#   SHA-1 beside its zip, not a SHA-512: the digest below is of the zip whose SHA-1 matched it.
#   The nodes the tests start disable it (plugins.security.disabled), except the one that tests
#   authentication (tests/opensearch_node.py).
# Into .cache/opensearch/<key>/opensearch-<version>, where <key> is a digest of this script.
# A second run with the same key only prints the directory.
# Usage: tools/opensearch/install.sh [print-dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

version=2.19.1
knn_version=2.19.1.0   # a plugin installs only into the exact OpenSearch version it was built for
central=https://repo1.maven.org/maven2
maven=$central/org/opensearch
server_url="$maven/distribution/integ-test-zip/opensearch/$version/opensearch-$version.zip"
server_sha512=0bed69daad3c80e1302a0dba083f04f5accbb94ba8451052822ec065d24432fe096e329d6971758a8a021025b0302ee5b27eb5d89506853d8be736305f407651
knn_url="$maven/plugin/opensearch-knn/$knn_version/opensearch-knn-$knn_version.zip"
knn_sha512=b773727c4c41d08f3e3af4726cde420b90749c55a5cc82ca5fd42a5b58f3edb002f2210b8653a597b5121d4034b428857df7bd82627b44946da7d2ad67111b28
security_url="$maven/plugin/opensearch-security/$knn_version/opensearch-security-$knn_version.zip"
security_sha512=89db39616847243fc02392c224164828caccd445ccf85143846ad1e382362f3cf1ce22f87052631eff1fa573dd1d0e6a2e12a54fe8947674cee552b10b736b8a

# The lang-painless module: its jar, its SPI and its dependencies (its POM), path and SHA-512.
painless_jars="
org/opensearch/plugin/lang-painless/$version/lang-painless-$version.jar ba2fe248236b51b7ffc8a8eb9999b893161f2708215fd65d8363dc2054d6c67ec25b6c1aca13f1d580789e14ecc10a714b69ed1e2e152c61ce3c22c47aee4ec2
org/opensearch/plugin/opensearch-scripting-painless-spi/$version/opensearch-scripting-painless-spi-$version.jar 964cb4b3b8ce94a42bc7e4e699d01db7b34c68966c8fc2d5014461c2b5e98a22e53b04173f8b33e2f12cd3ec9e571f033341ea72039017551de70641442624b1
org/antlr/antlr4-runtime/4.13.1/antlr4-runtime-4.13.1.jar 63eb51bfcee49c52848d8b7c3c46d8b4d367d85fb3c3db7175eaacba94e4d0c227b78e5955a0e86e575e1c6206fc2a43e5fa96fb04ad7c16e24ec94015cfc18b
org/ow2/asm/asm/9.7/asm-9.7.jar ada37fcc95884a4d2cbc64495f5f67556c847e7724e26ccfbb15cc42a476436fa54b5d4fd4d9ed340241d848999d415e1cff07045d9e97d451c16aeed4911045
org/ow2/asm/asm-util/9.7/asm-util-9.7.jar 7056f5905a27a8a3bc2e2b9774d1c70378b2441779bdce218f45aa2a549d1f4e2b81d562f20bf9a8d5be96d33e30a8f9e15caeebade6287dde6cc082afb36089
org/ow2/asm/asm-tree/9.7/asm-tree-9.7.jar 60c548f80af02ea8da5866104921ca818a8de846504faebac5cf016becba6b277a33bf594a7fd783443856310864b2ffc99aa11cd6f4e439c086734923ef823b
org/ow2/asm/asm-commons/9.7/asm-commons-9.7.jar 64544d7515aa4582ebf40e9a5ec32cbcee3ef0e3e15448bd56e6adb583d4ff764a34bba866816e4415298da939b029384a6ccf887c70b5fe98ac23589e626f79
org/ow2/asm/asm-analysis/9.7/asm-analysis-9.7.jar 69c2a9f73262b0fe5c1758973b5406dc0639b0e1d9a82863d5bc2d664395b737e45f50789c6f7ba3c8915d7ec79858e197032066d6b8386e35d6aed6cd95a8f2
"

key="$(sha256sum "$here/install.sh" | cut -c1-16)"
out="$root/.cache/opensearch/$key"
home="$out/opensearch-$version"
if [ "${1:-}" = "print-dir" ]; then echo "$home"; exit 0; fi
if [ -f "$out/.complete" ]; then echo "$home"; exit 0; fi

downloads="$root/.cache/opensearch/downloads"
mkdir -p "$downloads"

# fetch URL SHA512: the file in $downloads, downloaded unless a copy with that digest is there.
fetch() {
    local url="$1" want="$2" file
    file="$downloads/$(basename "$url")"
    if [ ! -f "$file" ] || [ "$(sha512sum "$file" | cut -d' ' -f1)" != "$want" ]; then
        curl --fail --silent --show-error --location --retry 3 -o "$file.part" "$url"
        local got
        got="$(sha512sum "$file.part" | cut -d' ' -f1)"
        if [ "$got" != "$want" ]; then
            rm -f "$file.part"
            echo "$url: SHA-512 $got, expected $want (pinned in tools/opensearch/install.sh)" >&2
            exit 1
        fi
        mv "$file.part" "$file"
    fi
    echo "$file"
}

command -v java >/dev/null 2>&1 || {
    echo "Java is not installed: OpenSearch cannot run (install a JDK 11+, e.g. Debian's" \
        "openjdk-17-jre-headless, then run make opensearch)" >&2
    exit 3
}
# The distribution's scripts look for Java in OPENSEARCH_JAVA_HOME or JAVA_HOME only.
if [ -z "${OPENSEARCH_JAVA_HOME:-}" ] && [ -z "${JAVA_HOME:-}" ]; then
    OPENSEARCH_JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
    export OPENSEARCH_JAVA_HOME
fi
server_zip="$(fetch "$server_url" "$server_sha512")"
knn_zip="$(fetch "$knn_url" "$knn_sha512")"
security_zip="$(fetch "$security_url" "$security_sha512")"
jars=()
while read -r path sha512; do
    [ -n "$path" ] || continue
    jars+=("$(fetch "$central/$path" "$sha512")")
done <<<"$painless_jars"

rm -rf "$out"
mkdir -p "$out"
unzip -q "$server_zip" -d "$out"
painless="$home/modules/lang-painless"
mkdir -p "$painless"
cp "${jars[@]}" "$painless/"
# The descriptor and policy the distribution's module carries (modules/lang-painless in
# OpenSearch's source: build.gradle's opensearchplugin block, plugin-security.policy).
cat >"$painless/plugin-descriptor.properties" <<DESCRIPTOR
description=An easy, safe and fast scripting language for OpenSearch
version=$version
name=lang-painless
classname=org.opensearch.painless.PainlessPlugin
java.version=11
opensearch.version=$version
extended.plugins=
has.native.controller=false
DESCRIPTOR
cat >"$painless/plugin-security.policy" <<'POLICY'
grant {
  // needed to generate runtime classes
  permission java.lang.RuntimePermission "createClassLoader";
  // needed to find the classloader to load allowlisted classes from
  permission java.lang.RuntimePermission "getClassLoader";
};
POLICY
for plugin in knn security; do
    zip_var="${plugin}_zip"
    if ! "$home/bin/opensearch-plugin" install --batch "file://${!zip_var}" \
        >"$out/$plugin-install.log" 2>&1; then
        cat "$out/$plugin-install.log" >&2
        exit 1
    fi
done
touch "$out/.complete"
echo "OpenSearch $version with k-NN and security $knn_version in $home" >&2
echo "$home"
