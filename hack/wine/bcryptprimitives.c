/*
 * bcryptprimitives.dll for Wine 8: exports ProcessPrng, which the Go runtime
 * (Go 1.24 and later) calls for its random numbers on Windows and which Wine
 * 8.0 does not provide. It fills the buffer from RtlGenRandom (advapi32's
 * SystemFunction036), the same source Wine uses for its own CSPRNG.
 *
 * Built by the Windows tests (test/windows) with Debian's mingw-w64 compiler:
 *
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll \
 *       bcryptprimitives.c -ladvapi32
 *
 * and copied into the Wine prefix's system32. Only for running pipeguard's
 * Windows binaries under Wine; Windows 10 and later ship the real DLL.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
	while (length > 0) {
		ULONG n = length > 0x7fffffff ? 0x7fffffff : (ULONG)length;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		length -= n;
	}
	return TRUE;
}
