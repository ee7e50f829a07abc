package api

// Helpers a plugin uses to build a ContainerUpdate for a running
// container. They carry the names and signatures of the helpers in
// containerd/nri's pkg/api; sub-messages are created on first use. Its
// resource helpers, the same as ContainerAdjustment's, are generated
// (resources.go).

// SetContainerId sets the ID of the container to update.
func (u *ContainerUpdate) SetContainerId(id string) { //nolint:revive // upstream name
	u.ContainerId = id
}

// SetIgnoreFailure marks the update as optional: its failure does not fail the request it came with.
func (u *ContainerUpdate) SetIgnoreFailure() {
	u.IgnoreFailure = true
}

// resources returns the update's resources, creating them when missing.
func (u *ContainerUpdate) resources() *LinuxResources {
	if u.Linux == nil {
		u.Linux = &LinuxContainerUpdate{}
	}
	return ensureResources(&u.Linux.Resources)
}
