package runner

// formatOps are the volume group's format and resize operations, which share
// a cap of their own (volume.FormatOps).
var formatOps = []string{"Format-Volume", "Resize-Partition"}
