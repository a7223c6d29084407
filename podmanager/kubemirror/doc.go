// Package kubemirror implements podmanager.MirrorClient on client-go: it
// creates and deletes the mirror pods of a node's static pods in the API
// server.
//
// A mirror pod is a copy of the static pod whose kubernetes.io/config.mirror
// annotation carries the static pod's kubernetes.io/config.hash, and whose
// controller owner reference is the Node (name and UID, read from the API on
// every create so that a recreated Node is picked up). The API server assigns
// the mirror its own UID; the pod manager pairs the two by full name
// (podmanager.Manager.TranslatePodUID).
//
// It lives in its own package so that importing podmanager does not pull in
// client-go.
package kubemirror
