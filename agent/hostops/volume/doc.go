// Package volume holds the host operations of the CSI Proxy volume API group,
// as constant PowerShell scripts run through a runner.Runner with every
// request value in the environment.
package volume
