// Package system serves the CSI Proxy system API group, version v1alpha1: the
// BIOS serial number and Windows services. Starting and stopping a service
// is allowed only for the services the agent was told to allow.
package system
