// Module podlife-registry-tools: the two helpers of scripts/registry/start.sh
// (an htpasswd writer and an image pusher), kept out of the main module so
// that it does not depend on golang.org/x/crypto. Built by start.sh only.
module podlife-registry-tools

go 1.26.0

require golang.org/x/crypto v0.57.0
