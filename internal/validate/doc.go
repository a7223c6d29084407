// Package validate holds the checks that the Options of several podlife
// packages share (agent/node, agent/status, agent/events, runtime/cri), so
// that they word their errors alike. It is internal and a leaf: it imports
// only the standard library, so runtime and agent may both use it.
package validate
