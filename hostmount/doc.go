// Package hostmount makes detached copies of host mount trees for a jail:
// read-only, nosuid, nodev, and (when the jail runs as another user than
// the files' owner) idmapped, so that a root supervisor never hands the
// jail a mount in which it could act as the owner of host files.
//
// A detached tree (open_tree with OPEN_TREE_CLONE) is a descriptor, not a
// path: the init moves it into the jail with move_mount, and nothing of the
// host is looked up by name again.
package hostmount
