package platform

import "golang.org/x/sys/windows"

// UnderWine reports whether the program runs under Wine, whose ntdll
// exports wine_get_version.
func UnderWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
