package pipepath

import (
	"strings"
	"testing"
)

const csi = "csi-proxy-disk-v1"

// classifyCases is the specification of Classify. FuzzClassify seeds its
// corpus from it.
var classifyCases = map[string]struct {
	in         string
	class      Class
	pipe       string // Class Pipe
	normalized string // checked when set; for Class Pipe always `\\.\pipe\` + pipe
	reason     string // Class Ambiguous
}{
	// One pipe, many spellings.
	"canonical":                                   {in: `\\.\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"upper case":                                  {in: `\\.\PIPE\CSI-PROXY-DISK-V1`, class: Pipe, pipe: csi},
	"mixed case":                                  {in: `\\.\PiPe\Csi-Proxy-Disk-V1`, class: Pipe, pipe: csi},
	"forward slashes":                             {in: `//./pipe/csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"mixed separators":                            {in: `\/.\pipe/csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"doubled separator after prefix":              {in: `\\.\pipe\\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"doubled separator after device":              {in: `\\.\\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"doubled forward slashes":                     {in: `//.//pipe//csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"win32 file namespace prefix":                 {in: `\\?\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"NT DOS devices prefix":                       {in: `\??\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"NT DOS devices prefix, slashes":              {in: `/??/PIPE/csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"UNC localhost":                               {in: `\\localhost\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"UNC LOCALHOST upper case":                    {in: `\\LOCALHOST\PIPE\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"UNC loopback IPv4":                           {in: `\\127.0.0.1\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"UNC loopback IPv6 bracketed":                 {in: `\\[::1]\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"UNC loopback IPv6 bare":                      {in: `\\::1\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"UNC IPv6 literal name":                       {in: `\\0--1.ipv6-literal.net\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"UNC other host":                              {in: `\\node-7.corp.example\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"UNC host with trailing dot":                  {in: `\\localhost.\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"UNC host named ??":                           {in: `\\??\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"NT named pipe device":                        {in: `\Device\NamedPipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"NT named pipe device, slashes":               {in: `/device/namedpipe/csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"long UNC":                                    {in: `\\?\UNC\localhost\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"long UNC via dot":                            {in: `\\.\UNC\127.0.0.1\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"NT UNC":                                      {in: `\??\UNC\localhost\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"GLOBALROOT via dot":                          {in: `\\.\GLOBALROOT\Device\NamedPipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"GLOBALROOT via question mark":                {in: `\\?\GLOBALROOT\Device\NamedPipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"GLOBALROOT back to DOS devices":              {in: `\\.\GLOBALROOT\??\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"GLOBALROOT to GLOBAL??":                      {in: `\\.\GLOBALROOT\GLOBAL??\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"GLOBALROOT to Mup":                           {in: `\\.\GLOBALROOT\Device\Mup\localhost\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"Global link":                                 {in: `\\.\Global\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"Global link twice":                           {in: `\\?\Global\GLOBAL\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"NT Global link":                              {in: `\??\Global\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"NT GLOBAL??":                                 {in: `\GLOBAL??\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"NT DosDevices":                               {in: `\DosDevices\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"Mup with redirector prefix":                  {in: `\Device\Mup\;LanmanRedirector\node-7\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"dot segment":                                 {in: `\\.\pipe\.\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"dot-dot inside the pipe name":                {in: `\\.\pipe\x\..\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"two dot-dots inside the pipe name":           {in: `\\.\pipe\x\y\..\..\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"dot-dot inside a UNC pipe name":              {in: `\\localhost\pipe\x\..\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"dot-dot inside an NT pipe name":              {in: `\??\pipe\x\..\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"leading and trailing spaces":                 {in: "  \\\\.\\pipe\\csi-proxy-disk-v1  ", class: Pipe, pipe: csi},
	"leading tab, trailing newline":               {in: "\t\\\\.\\pipe\\csi-proxy-disk-v1\n", class: Pipe, pipe: csi},
	"trailing dot":                                {in: `\\.\pipe\csi-proxy-disk-v1.`, class: Pipe, pipe: csi},
	"trailing dots and spaces":                    {in: `\\.\pipe\csi-proxy-disk-v1. . ..`, class: Pipe, pipe: csi},
	"trailing dot on the pipe root":               {in: `\\.\pipe.\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"trailing space on the pipe root":             {in: `\\.\pipe \csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"trailing dot on the share":                   {in: `\\localhost\pipe.\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"trailing separator":                          {in: `\\.\pipe\csi-proxy-disk-v1\`, class: Pipe, pipe: csi},
	"look-alike beyond Windows: dotted capital I": {in: `\\.\PİPE\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"look-alike beyond Windows: dotless i":        {in: `\\.\pıpe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},
	"look-alike beyond Windows: long s":           {in: `\\.\pipe\cſi-proxy-diſk-v1`, class: Pipe, pipe: csi},
	"look-alike beyond Windows: Kelvin sign":      {in: "\\\\.\\pipe\\csi-proxy-dis\u212a-v1", class: Pipe, pipe: csi},
	"pipe name with a backslash":                  {in: `\\.\pipe\a\b`, class: Pipe, pipe: `a\b`},
	"pipe name with slashes":                      {in: `\\.\pipe\ProtectedPrefix/Sub/Name`, class: Pipe, pipe: `protectedprefix\sub\name`},
	"other pipe":                                  {in: `\\.\pipe\docker_engine`, class: Pipe, pipe: "docker_engine"},
	"pipe name with a percent sign":               {in: `\\.\pipe\100%`, class: Pipe, pipe: "100%"},

	// Paths that name the pipe namespace or a directory above it.
	"pipe namespace":                  {in: `\\.\pipe\`, class: Ambiguous, normalized: `\\.\pipe`, reason: reasonNamespace},
	"pipe namespace without slash":    {in: `\\.\pipe`, class: Ambiguous, normalized: `\\.\pipe`, reason: reasonNamespace},
	"pipe namespace, slashes":         {in: `//./PIPE/`, class: Ambiguous, reason: reasonNamespace},
	"pipe namespace via UNC":          {in: `\\localhost\pipe`, class: Ambiguous, reason: reasonNamespace},
	"pipe namespace via NT":           {in: `\Device\NamedPipe\`, class: Ambiguous, reason: reasonNamespace},
	"pipe namespace via GLOBALROOT":   {in: `\\?\GLOBALROOT\Device\NamedPipe`, class: Ambiguous, reason: reasonNamespace},
	"pipe namespace by trailing dots": {in: `\\.\pipe\...`, class: Ambiguous, reason: reasonDots},
	"pipe namespace by dot-dot":       {in: `\\.\pipe\csi-proxy-disk-v1\..`, class: Ambiguous, reason: reasonNamespace},
	"device namespace":                {in: `\\.\`, class: Ambiguous, reason: reasonAncestor},
	"device namespace without slash":  {in: `\\.`, class: Ambiguous, reason: reasonAncestor},
	"file namespace":                  {in: `\\?\`, class: Ambiguous, reason: reasonAncestor},
	"NT DOS devices":                  {in: `\??`, class: Ambiguous, reason: reasonAncestor},
	"object namespace root":           {in: `\\.\GLOBALROOT`, class: Ambiguous, reason: reasonAncestor},
	"NT Device directory":             {in: `\\.\GLOBALROOT\Device\`, class: Ambiguous, reason: reasonAncestor},
	"NT Device directory, rooted":     {in: `\Device`, class: Ambiguous, reason: reasonAncestor},
	"Global link alone":               {in: `\\.\Global`, class: Ambiguous, reason: reasonAncestor},
	"UNC server":                      {in: `\\localhost`, class: Ambiguous, reason: reasonServer},
	"UNC server with slash":           {in: `\\localhost\`, class: Ambiguous, reason: reasonServer},
	"long UNC server":                 {in: `\\?\UNC\localhost`, class: Ambiguous, reason: reasonServer},
	"IPC$ share":                      {in: `\\localhost\IPC$`, class: Ambiguous, reason: reasonIPC},
	"IPC$ share with a name":          {in: `\\localhost\ipc$\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonIPC},

	// Characters that some reader may take differently from the text.
	"NUL at the end":                 {in: "\\\\.\\pipe\\csi-proxy-disk-v1\x00", class: Ambiguous, normalized: "\\\\.\\pipe\\csi-proxy-disk-v1\uFFFD", reason: reasonNUL},
	"NUL inside the prefix":          {in: "\\\\.\\pi\x00pe\\csi-proxy-disk-v1", class: Ambiguous, reason: reasonNUL},
	"NUL first":                      {in: "\x00\\\\.\\pipe\\csi-proxy-disk-v1", class: Ambiguous, reason: reasonNUL},
	"NUL cuts before a share suffix": {in: "\\\\localhost\\pipe\x00line\\x", class: Ambiguous, reason: reasonNUL},
	"control character":              {in: "\\\\.\\pipe\\csi-proxy-disk-v1\x01", class: Ambiguous, reason: reasonControl},
	"line break":                     {in: "\\\\.\\pipe\\csi\nproxy", class: Ambiguous, normalized: "\\\\.\\pipe\\csi\uFFFDproxy", reason: reasonControl},
	"C1 control":                     {in: "\\\\.\\pipe\\csi\u0085proxy", class: Ambiguous, reason: reasonControl},
	"invalid UTF-8":                  {in: "\\\\.\\pipe\\csi-proxy-disk-v1\xff", class: Ambiguous, reason: reasonUTF8},
	"replacement character":          {in: "\\\\.\\pipe\\csi-proxy-disk-v1\uFFFD", class: Ambiguous, reason: reasonUTF8},
	"overlong slashes":               {in: "\xc0\xaf\xc0\xaf.\xc0\xafpipe\xc0\xafcsi-proxy-disk-v1", class: Ambiguous, reason: reasonUTF8},
	"zero-width space in pipe":       {in: "\\\\.\\pi\u200bpe\\csi-proxy-disk-v1", class: Ambiguous, reason: reasonInvisible},
	"bidi override":                  {in: "\\\\.\\pipe\\\u202ecsi-proxy-disk-v1", class: Ambiguous, reason: reasonInvisible},
	"byte order mark first":          {in: "\ufeff\\\\.\\pipe\\csi-proxy-disk-v1", class: Ambiguous, reason: reasonInvisible},
	"line separator in a name":       {in: "\\\\.\\pipe\\csi-proxy\u2028disk-v1", class: Ambiguous, normalized: "\\\\.\\pipe\\csi-proxy\uFFFDdisk-v1", reason: reasonInvisible},
	"paragraph separator in pipe":    {in: "\\\\.\\pi\u2029pe\\csi-proxy-disk-v1", class: Ambiguous, reason: reasonInvisible},
	"hangul filler in a name":        {in: "\\\\.\\pipe\\csi\u3164proxy", class: Ambiguous, normalized: "\\\\.\\pipe\\csi\uFFFDproxy", reason: reasonInvisible},
	"hangul choseong filler":         {in: "\\\\.\\pipe\\\u115fcsi-proxy-disk-v1", class: Ambiguous, reason: reasonInvisible},
	"hangul jungseong filler":        {in: "\\\\.\\pipe\\csi-proxy-disk-v1\u1160", class: Ambiguous, reason: reasonInvisible},
	"halfwidth hangul filler":        {in: "\\\\.\\p\uffa0ipe\\csi-proxy-disk-v1", class: Ambiguous, reason: reasonInvisible},
	"braille blank in a name":        {in: "\\\\.\\pipe\\csi-proxy\u2800-disk-v1", class: Ambiguous, normalized: "\\\\.\\pipe\\csi-proxy\uFFFD-disk-v1", reason: reasonInvisible},
	"mongolian vowel separator":      {in: "\\\\.\\pipe\u180e\\csi-proxy-disk-v1", class: Ambiguous, reason: reasonInvisible},
	"percent-encoded separator":      {in: `\\.\pipe%5ccsi-proxy-disk-v1`, class: Ambiguous, reason: reasonEncoded},
	"percent-encoded everything":     {in: `%5C%5C.%5Cpipe%5Ccsi-proxy-disk-v1`, class: Ambiguous, reason: reasonEncoded},
	"double percent-encoding":        {in: `%255c%255c.%255cpipe%255ccsi-proxy-disk-v1`, class: Ambiguous, reason: reasonEncoded},
	"percent-encoded slashes":        {in: `\\.%2fpipe%2fcsi-proxy-disk-v1`, class: Ambiguous, reason: reasonEncoded},
	"%u-encoded separators":          {in: `%u005c%u005c.%u005cpipe%u005ccsi-proxy-disk-v1`, class: Ambiguous, reason: reasonEncoded},
	"encoded dot-dot climbing":       {in: `\\.\pipe\x%2f..%2f..%2fcsi-proxy-disk-v1`, class: Ambiguous, reason: reasonEncoded},
	"encoded overlong slash":         {in: `%c0%af%c0%af.%c0%afpipe%c0%afcsi-proxy-disk-v1`, class: Ambiguous, reason: reasonEncoded},
	"full-width backslash":           {in: `\\.\pipe＼csi-proxy-disk-v1`, class: Ambiguous, reason: reasonLookalike},
	"full-width everything":          {in: `＼＼．＼ｐｉｐｅ＼csi-proxy-disk-v1`, class: Ambiguous, reason: reasonLookalike},
	"yen signs":                      {in: `¥¥.¥pipe¥csi-proxy-disk-v1`, class: Ambiguous, reason: reasonLookalike},
	"division slashes":               {in: `∕∕.∕pipe∕csi-proxy-disk-v1`, class: Ambiguous, reason: reasonLookalike},

	// Structure that cannot be resolved confidently.
	"unknown device mentioning pipe":    {in: `\\.\pipex\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonUnknownDev},
	"device with a leading space":       {in: `\\.\ pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonUnknownDev},
	"NamedPipe under DOS devices":       {in: `\\.\NamedPipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonUnknownDev},
	"pipe device with a colon":          {in: `\\?\pipe:csi-proxy-disk-v1`, class: Ambiguous, reason: reasonUnknownDev},
	"session DOS devices":               {in: `\\.\GLOBALROOT\Sessions\0\DosDevices\00000000-000003e7\Global\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonUnknownDev},
	"silo DOS devices":                  {in: `\Silos\1234\GLOBAL??\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonUnknownDev},
	"endless Global links":              {in: `\\.\` + strings.Repeat(`Global\`, 20) + `pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonLoop},
	"leading triple backslash":          {in: `\\\.\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonLeadingRun},
	"leading triple slash":              {in: `///./pipe/csi-proxy-disk-v1`, class: Ambiguous, reason: reasonLeadingRun},
	"leading quadruple UNC":             {in: `\\\\localhost\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonLeadingRun},
	"leading triple to GLOBALROOT":      {in: `\\\.\GLOBALROOT`, class: Ambiguous, reason: reasonLeadingRun},
	"triple separator after prefix":     {in: `\\.\pipe\\\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonRun},
	"dot-dot above the pipe root":       {in: `\\.\pipe\..\csi-proxy-disk-v1`, class: Ambiguous, normalized: `\\.\pipe\csi-proxy-disk-v1`, reason: reasonClimb},
	"dot-dot back into the pipe root":   {in: `\\.\pipe\..\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonClimb},
	"dot-dots out of the pipe name":     {in: `\\.\pipe\x\..\..\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonClimb},
	"dot-dot above the UNC share":       {in: `\\localhost\pipe\..\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonClimb},
	"dot-dot above a long UNC share":    {in: `\\?\UNC\localhost\pipe\..\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonClimb},
	"dot-dot as the UNC server":         {in: `\\..\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonClimb},
	"dot-dot above a device drive":      {in: `\\.\C:\..\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonClimb},
	"dot-dot above NamedPipe":           {in: `\\?\GLOBALROOT\Device\NamedPipe\..\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonClimb},
	"dot-dot above NT pipe root":        {in: `\??\pipe\..\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonClimb},
	"dot as the device name":            {in: `\\.\.\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonRootDot},
	"dot as the UNC share":              {in: `\\localhost\.\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonRootDot},
	"dot as the long UNC server":        {in: `\\?\UNC\.\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonRootDot},
	"dot under GLOBALROOT":              {in: `\\.\GLOBALROOT\.\Device\NamedPipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonRootDot},
	"dot before an NT path":             {in: `\.\Device\NamedPipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonCleansToNT},
	"dot-dot before an NT path":         {in: `/../??/pipe/csi-proxy-disk-v1`, class: Ambiguous, reason: reasonCleansToNT},
	"directory and dot-dot before NT":   {in: `\x\..\??\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonCleansToNT},
	"server that reads as a redirector": {in: `\\;x\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonRedirector},
	"empty long UNC server":             {in: `\\?\UNC\\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonEmptyName},
	"empty UNC share":                   {in: `\\localhost\\pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonEmptyName},
	"three dots":                        {in: `\\.\pipe\x\...\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonDots},
	"dot-dot with a trailing space":     {in: `\\.\pipe\x\.. \csi-proxy-disk-v1`, class: Ambiguous, reason: reasonDots},
	"space-only segment":                {in: `\\.\pipe\ \csi-proxy-disk-v1`, class: Ambiguous, reason: reasonDots},
	"device marker with a space":        {in: `\\. \pipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonDots},
	"stream suffix":                     {in: `\\.\pipe\csi-proxy-disk-v1::$DATA`, class: Ambiguous, reason: reasonReserved},
	"wildcard":                          {in: `\\.\pipe\csi-proxy-*`, class: Ambiguous, reason: reasonReserved},
	"DOS wildcard":                      {in: `\\.\pipe\csi-proxy-disk-v1<`, class: Ambiguous, reason: reasonReserved},
	"question mark":                     {in: `\\.\pipe\csi-proxy-disk-v?`, class: Ambiguous, reason: reasonReserved},
	"UNC host that reads as NT":         {in: `\\Device\NamedPipe\csi-proxy-disk-v1`, class: Ambiguous, reason: reasonNTCollapse},
	"UNC host GLOBAL?? is a server":     {in: `\\GLOBAL??\pipe\csi-proxy-disk-v1`, class: Pipe, pipe: csi},

	// Ordinary paths.
	"empty":                             {in: "", class: NotPipe, normalized: ""},
	"blank":                             {in: "  \t ", class: NotPipe, normalized: ""},
	"Windows kubelet dir":               {in: `C:\var\lib\kubelet`, class: NotPipe, normalized: `c:\var\lib\kubelet`},
	"Windows path with slashes":         {in: `c:/var/lib/kubelet/`, class: NotPipe, normalized: `c:\var\lib\kubelet`},
	"Linux kubelet dir":                 {in: `/var/lib/kubelet`, class: NotPipe, normalized: `\var\lib\kubelet`},
	"Linux socket":                      {in: `/var/run/containerd/containerd.sock`, class: NotPipe},
	"Linux triple slash":                {in: `///var/lib`, class: NotPipe},
	"drive root":                        {in: `C:\`, class: NotPipe, normalized: `c:\`},
	"directory named pipe on a drive":   {in: `C:\pipe\csi-proxy-disk-v1`, class: NotPipe, normalized: `c:\pipe\csi-proxy-disk-v1`},
	"drive path that mimics a prefix":   {in: `C:\\.\pipe\csi-proxy-disk-v1`, class: NotPipe, normalized: `c:\pipe\csi-proxy-disk-v1`},
	"drive dot-dots stop at the root":   {in: `C:\..\..\pipe\csi-proxy-disk-v1`, class: NotPipe, normalized: `c:\pipe\csi-proxy-disk-v1`},
	"rooted directory named pipe":       {in: `\pipe\csi-proxy-disk-v1`, class: NotPipe, normalized: `\pipe\csi-proxy-disk-v1`},
	"rooted dot path":                   {in: `\.\pipe\csi-proxy-disk-v1`, class: NotPipe},
	"relative path":                     {in: `pipe\csi-proxy-disk-v1`, class: NotPipe},
	"relative path climbing":            {in: `..\..\pipe\csi-proxy-disk-v1`, class: NotPipe, normalized: `..\..\pipe\csi-proxy-disk-v1`},
	"drive through the device prefix":   {in: `\\.\C:\pipe\csi-proxy-disk-v1`, class: NotPipe},
	"drive through the file prefix":     {in: `\\?\C:\var\lib`, class: NotPipe, normalized: `\\?\c:\var\lib`},
	"volume GUID path":                  {in: `\\?\Volume{26a21bda-a627-11d7-9931-806e6f6e6963}\pipe\x`, class: NotPipe},
	"hard disk volume":                  {in: `\\.\GLOBALROOT\Device\HarddiskVolume1\pipe\x`, class: NotPipe},
	"SMB share":                         {in: `\\fileserver\data\csi-proxy-disk-v1`, class: NotPipe, normalized: `\\fileserver\data\csi-proxy-disk-v1`},
	"SMB share with a pipe directory":   {in: `\\fileserver\data\pipe\csi-proxy-disk-v1`, class: NotPipe},
	"SMB share named like a pipe":       {in: `\\fileserver\pipeline\x`, class: NotPipe},
	"SMB share with a dot-dot":          {in: `\\fileserver\data\a\..\b`, class: NotPipe, normalized: `\\fileserver\data\b`},
	"physical drive":                    {in: `\\.\PhysicalDrive0`, class: NotPipe},
	"mailslot":                          {in: `\\.\mailslot\x`, class: NotPipe},
	"NUL in an ordinary path":           {in: "C:\\x\x00\\\\.\\pipe\\csi-proxy-disk-v1", class: NotPipe},
	"yen sign in a Japanese path":       {in: `C:\データ¥x`, class: NotPipe},
	"percent in an ordinary path":       {in: `C:\Users\pipeline%20data`, class: NotPipe},
	"zero-width joiner in a drive path": {in: "C:\\emoji\\a\u200db", class: NotPipe},
}

func TestClassify(t *testing.T) {
	for name, tc := range classifyCases {
		t.Run(name, func(t *testing.T) {
			got := Classify(tc.in)
			if got.Class != tc.class {
				t.Fatalf("Classify(%q).Class = %q (reason %q), want %q", tc.in, got.Class, got.Reason, tc.class)
			}
			if got.Pipe != tc.pipe {
				t.Errorf("Classify(%q).Pipe = %q, want %q", tc.in, got.Pipe, tc.pipe)
			}
			want, check := tc.normalized, tc.normalized != "" || strings.TrimSpace(tc.in) == ""
			if tc.class == Pipe {
				want, check = PipePrefix+tc.pipe, true
			}
			if check && got.Normalized != want {
				t.Errorf("Classify(%q).Normalized = %q, want %q", tc.in, got.Normalized, want)
			}
			if got.Reason != tc.reason {
				t.Errorf("Classify(%q).Reason = %q, want %q", tc.in, got.Reason, tc.reason)
			}
		})
	}
}
