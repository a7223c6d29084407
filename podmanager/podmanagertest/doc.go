// Package podmanagertest has fakes for tests of code that uses podmanager.
//
// MirrorClient is an in-memory podmanager.MirrorClient: it behaves like the
// client-go implementation against an API server (fresh UIDs, AlreadyExists
// with the same hash is success, deletes honour the UID precondition) and
// records every call. Its limits: no Node (so never ErrNodeBeingDeleted
// unless scripted), no owner references, no watch; errors are injected with
// CreateErr and DeleteErr.
package podmanagertest
