package volume

// vol is the volume the tests of the WMI operations format and resize.
const vol = `\\?\Volume{452e318a-5cde-421e-9831-b9853c521012}\`
