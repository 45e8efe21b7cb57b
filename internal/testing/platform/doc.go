// Package platform tells tests which platform quirks they run under.
package platform
