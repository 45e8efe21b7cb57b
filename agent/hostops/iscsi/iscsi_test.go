package iscsi

// iqn is the target the tests of the WMI operations connect to.
const iqn = "iqn.2001-04.com.example:storage.disk1"
