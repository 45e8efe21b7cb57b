//go:build windows

package main

// The WMI half of the fixture: the storage, SMB and iSCSI classes
// the disk, volume, smb and iscsi groups call (wmitest's in-memory
// provider), made from the same JSON file as the Win32 fixture, so that
// the volume GUID paths and disk numbers the Win32 calls answer are those
// of MSFT_Volume.UniqueId and MSFT_Disk.Number. Every WMI call of this
// agent goes to the fixture: none reaches Wine's WMI service, which has
// none of these classes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/pipeguard/pipeguard/agent/hostops/wmi"
	"github.com/pipeguard/pipeguard/internal/testing/wmitest"
)

// wmiFixtureLogEnv, when set, names a file every WMI call of the agent is
// appended to as a JSON line (wmiRecord): each query and Get with its
// text or path, and each method call with its object and the names of
// its in-parameters, never their values.
const wmiFixtureLogEnv = "PIPEGUARD_WMI_FIXTURE_LOG"

// fixtureSMBMapping is an SMB global mapping.
type fixtureSMBMapping struct {
	RemotePath string `json:"remotePath"`
	// Status is MSFT_SmbGlobalMapping.Status: 0 OK (the default), 2
	// Disconnected, 6 Unavailable, ...
	Status uint32 `json:"status"`
}

// fixtureISCSIPortal is an iSCSI target portal.
type fixtureISCSIPortal struct {
	Address string `json:"address"`
	// Port is its TCP port; 0 is 3260.
	Port uint16 `json:"port"`
	// Added says the portal is configured at the start; otherwise it is
	// not until MSFT_iSCSITargetPortal.New adds it.
	Added bool `json:"added"`
	// Targets are the targets discovered through it once it is there.
	Targets []fixtureISCSITarget `json:"targets"`
}

// fixtureISCSITarget is a target and the disks of its connection.
type fixtureISCSITarget struct {
	IQN string `json:"iqn"`
	// Disks are numbers of disks of the fixture.
	Disks []uint32 `json:"disks"`
}

// fixtureHold is a method that never answers.
type fixtureHold struct {
	// Method is Class.Method, e.g. "MSFT_Volume.Format".
	Method string `json:"method"`
	// Volume, when set, holds the method of that volume alone (its
	// UniqueId); Disk, when set, of that disk number alone.
	Volume string  `json:"volume"`
	Disk   *uint32 `json:"disk"`
}

// loadWMIFixture reads the file fixtureEnv names and returns the WMI
// provider it describes.
func loadWMIFixture() (wmi.Conn, error) {
	path := os.Getenv(fixtureEnv)
	if path == "" {
		return nil, fmt.Errorf("this is a test build (test/wine/cmd/fixtureagent) whose WMI calls go to a fixture, and %s is not set: set it to the fixture's JSON file, or run the shipped build", fixtureEnv)
	}
	f, err := readFixture(path)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", fixtureEnv, path, err)
	}
	c, err := f.wmiConn()
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", fixtureEnv, path, err)
	}
	if name := os.Getenv(wmiFixtureLogEnv); name != "" {
		file, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: opening the WMI call log: %w", wmiFixtureLogEnv, err)
		}
		c.log = &callLog{w: file}
	}
	return c, nil
}

// fixtureConn is the fixture's wmi.Conn: the provider, the fixture's
// holds, the volumes and targets that appear when a method makes them,
// and the call log.
type fixtureConn struct {
	p       *wmitest.Provider
	storage *wmitest.Storage
	iscsi   *wmitest.ISCSI
	holds   []fixtureHold
	log     *callLog // nil: no log

	mu sync.Mutex
	// pending are, by disk number, the volume GUID paths of a raw disk's
	// volumes that the next CreatePartitions on the disk make.
	pending map[uint32][]fixtureVolume
	// portals are the portals not yet added, by lower-case address:port.
	portals map[string]fixtureISCSIPortal
	disks   map[uint32]*wmitest.Instance
}

var _ wmi.Conn = (*fixtureConn)(nil)

// wmiConn makes the provider f describes.
func (f fixtureFile) wmiConn() (*fixtureConn, error) {
	p := wmitest.New()
	c := &fixtureConn{p: p, storage: wmitest.AddStorage(p), iscsi: wmitest.AddISCSI(p), holds: f.WMIHolds,
		pending: map[uint32][]fixtureVolume{}, portals: map[string]fixtureISCSIPortal{}, disks: map[uint32]*wmitest.Instance{}}
	smb := wmitest.AddSMB(p)
	styles := map[string]uint16{"": 2, "gpt": 2, "mbr": 1, "raw": 0}
	for i, d := range f.Disks {
		style, ok := styles[strings.ToLower(d.PartitionStyle)]
		if !ok {
			return nil, fmt.Errorf(`disks[%d] (disk %d): partitionStyle %q: give "gpt", "mbr" or "raw"`, i, d.Number, d.PartitionStyle)
		}
		in := c.storage.AddDisk(d.Number, uint64(max(d.Size, 0)), style)
		if d.Offline {
			c.storage.Set(in, "IsOffline", true)
		}
		c.disks[d.Number] = in
	}
	for i, v := range f.Volumes {
		if len(v.Extents) == 0 {
			continue // no disk to place it on: Win32 only
		}
		n := v.Extents[0].Disk
		d := c.disks[n]
		if d == nil {
			return nil, fmt.Errorf("volumes[%d]: its first extent is on disk %d, which disks does not give: the WMI fixture places a volume on its disk", i, n)
		}
		style, _ := c.storage.Prop(d, "PartitionStyle").(uint16)
		if style == 0 {
			c.pending[n] = append(c.pending[n], v)
			continue
		}
		gpt := ""
		if style == 2 {
			gpt = wmitest.GPTBasicData
		}
		part := c.storage.AddPartition(d, uint64(max(v.Extents[0].Length, 0)), gpt)
		c.storage.AddVolume(part, win32VolumeRoot(v.ID), v.FileSystem)
	}
	for i, m := range f.SMBMappings {
		if m.RemotePath == "" {
			return nil, fmt.Errorf("smbMappings[%d]: give its remotePath", i)
		}
		smb.AddMapping(m.RemotePath, m.Status)
	}
	for i, pt := range f.ISCSIPortals {
		if pt.Address == "" {
			return nil, fmt.Errorf("iscsiPortals[%d]: give its address", i)
		}
		if pt.Port == 0 {
			pt.Port = 3260
		}
		for j, t := range pt.Targets {
			if t.IQN == "" {
				return nil, fmt.Errorf("iscsiPortals[%d].targets[%d]: give its iqn", i, j)
			}
			for _, n := range t.Disks {
				if c.disks[n] == nil {
					return nil, fmt.Errorf("iscsiPortals[%d].targets[%d]: disk %d is not one of disks", i, j, n)
				}
			}
		}
		if pt.Added {
			c.addTargets(c.iscsi.AddPortal(pt.Address, pt.Port), pt)
			continue
		}
		c.portals[portalKey(pt.Address, pt.Port)] = pt
	}
	for i, h := range f.WMIHolds {
		if class, method, ok := strings.Cut(h.Method, "."); !ok || class == "" || method == "" {
			return nil, fmt.Errorf("wmiHolds[%d]: method %q: give Class.Method, e.g. MSFT_Volume.Format", i, h.Method)
		}
	}
	return c, nil
}

// win32VolumeRoot is a volume GUID path with its trailing backslash, as
// MSFT_Volume.UniqueId holds it.
func win32VolumeRoot(id string) string { return strings.TrimRight(id, `\`) + `\` }

func portalKey(address string, port uint16) string {
	return strings.ToLower(address) + ":" + fmt.Sprint(port)
}

// addTargets makes pt's targets discoverable through the portal instance.
func (c *fixtureConn) addTargets(portal *wmitest.Instance, pt fixtureISCSIPortal) {
	for _, t := range pt.Targets {
		target := c.iscsi.AddTarget(portal, t.IQN)
		for _, n := range t.Disks {
			c.iscsi.AttachDisk(target, c.disks[n])
		}
	}
}

// wmiRecord is one line of the WMI call log.
type wmiRecord struct {
	// Kind is "query", "get" or "call".
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	// WQL is a query's text.
	WQL string `json:"wql,omitempty"`
	// Path is the object a Get or a method call was made on.
	Path string `json:"path,omitempty"`
	// Method is a call's Class.Method.
	Method string `json:"method,omitempty"`
	// On names the instance a method ran on ("disk 3", "volume
	// \\?\Volume{...}\"); empty for a static method.
	On string `json:"on,omitempty"`
	// Params are the names of a call's in-parameters, in the order given.
	Params []string `json:"params,omitempty"`
	// Objects is how many objects a query returned.
	Objects int `json:"objects,omitempty"`
	// ReturnValue is a method's.
	ReturnValue *uint32 `json:"returnValue,omitempty"`
	// Held says the call was held by the fixture (wmiHolds).
	Held  bool   `json:"held,omitempty"`
	Error string `json:"error,omitempty"`
}

// record appends r to the log, if there is one, and returns err joined
// with the log's own error: a log a test reads is never silently short.
func (c *fixtureConn) record(r wmiRecord, err error) error {
	if c.log == nil {
		return err
	}
	if err != nil {
		r.Error = err.Error()
	}
	line, merr := json.Marshal(r)
	if merr == nil {
		c.log.mu.Lock()
		_, merr = c.log.w.Write(append(line, '\n'))
		c.log.mu.Unlock()
	}
	if merr != nil {
		return errors.Join(err, fmt.Errorf("%s: writing the WMI call log: %w", wmiFixtureLogEnv, merr))
	}
	return err
}

// Query implements wmi.Conn.
func (c *fixtureConn) Query(ctx context.Context, ns, wql string) ([]wmi.Object, error) {
	objs, err := c.p.Query(ctx, ns, wql)
	return objs, c.record(wmiRecord{Kind: "query", Namespace: ns, WQL: wql, Objects: len(objs)}, err)
}

// Get implements wmi.Conn.
func (c *fixtureConn) Get(ctx context.Context, ns, path string) (wmi.Object, error) {
	o, err := c.p.Get(ctx, ns, path)
	return o, c.record(wmiRecord{Kind: "get", Namespace: ns, Path: path}, err)
}

// Call implements wmi.Conn: a held method waits for ctx; CreatePartition
// on a raw disk of the fixture gives the new volume the fixture's volume
// GUID path, and a new target portal leads to the fixture's targets.
func (c *fixtureConn) Call(ctx context.Context, ns, path, method string, in ...wmi.Param) (wmi.Object, error) {
	self, _ := c.p.Get(ctx, ns, path)
	class := self.Class
	if class == "" {
		class, _, _ = strings.Cut(path, ".")
	}
	r := wmiRecord{Kind: "call", Namespace: ns, Path: path, Method: class + "." + method, On: describe(self)}
	for _, p := range in {
		r.Params = append(r.Params, p.Name)
	}
	if c.held(r.Method, self) {
		r.Held = true
		<-ctx.Done()
		return wmi.Object{}, c.record(r, ctx.Err())
	}
	out, err := c.p.Call(ctx, ns, path, method, in...)
	if v, ok := wmi.Uint32(out.Props["ReturnValue"]); ok && err == nil {
		r.ReturnValue = &v
		if v == 0 {
			err = c.made(ctx, r.Method, self, out, in)
		}
	}
	return out, c.record(r, err)
}

// held tells whether a hold of the fixture matches the call.
func (c *fixtureConn) held(method string, self wmi.Object) bool {
	for _, h := range c.holds {
		if !strings.EqualFold(h.Method, method) {
			continue
		}
		if h.Volume != "" && !strings.EqualFold(win32VolumeRoot(h.Volume), fmt.Sprint(self.Props["UniqueId"])) {
			continue
		}
		if h.Disk != nil {
			if n, ok := wmi.Uint32(self.Props["Number"]); !ok || n != *h.Disk {
				continue
			}
		}
		return true
	}
	return false
}

// made gives what a successful method made the fixture's names.
func (c *fixtureConn) made(ctx context.Context, method string, self, out wmi.Object, in []wmi.Param) error {
	switch strings.ToLower(method) {
	case "msft_disk.createpartition":
		n, _ := wmi.Uint32(self.Props["Number"])
		c.mu.Lock()
		list := c.pending[n]
		if len(list) == 0 {
			c.mu.Unlock()
			return nil
		}
		v := list[0]
		c.pending[n] = list[1:]
		c.mu.Unlock()
		part, _ := out.Props["CreatedPartition"].(wmi.Object)
		vols, err := c.p.Query(ctx, wmi.NamespaceStorage, "ASSOCIATORS OF {"+part.Path+"} WHERE AssocClass = MSFT_PartitionToVolume ResultClass = MSFT_Volume")
		if err != nil || len(vols) != 1 {
			return fmt.Errorf("wmi fixture: the volume of the partition CreatePartition made on disk %d: %d volumes, %v", n, len(vols), err)
		}
		for _, inst := range c.p.Instances(wmi.NamespaceStorage, "MSFT_Volume") {
			if c.storage.Prop(inst, "ObjectId") == vols[0].Props["ObjectId"] {
				c.storage.Set(inst, "UniqueId", win32VolumeRoot(v.ID))
				c.storage.Set(inst, "FileSystem", v.FileSystem)
			}
		}
	case "msft_iscsitargetportal.new":
		var address string
		var port uint16
		for _, p := range in {
			switch p.Name {
			case "TargetPortalAddress":
				address, _ = p.Value.(string)
			case "TargetPortalPortNumber":
				port, _ = p.Value.(uint16)
			}
		}
		c.mu.Lock()
		pt, ok := c.portals[portalKey(address, port)]
		delete(c.portals, portalKey(address, port))
		c.mu.Unlock()
		if !ok {
			return nil
		}
		for _, inst := range c.p.Instances(wmi.NamespaceStorage, wmitest.ClassISCSITargetPortal) {
			if a, _ := c.storage.Prop(inst, "TargetPortalAddress").(string); strings.EqualFold(a, address) && c.storage.Prop(inst, "TargetPortalPortNumber") == port {
				c.addTargets(inst, pt)
			}
		}
	}
	return nil
}

// describe names an instance for the log.
func describe(o wmi.Object) string {
	p := o.Props
	if len(p) == 0 {
		return "" // a class: a static method
	}
	switch o.Class {
	case "MSFT_Disk":
		return fmt.Sprintf("disk %v", p["Number"])
	case "MSFT_Partition":
		return fmt.Sprintf("partition %v of disk %v", p["PartitionNumber"], p["DiskNumber"])
	case "MSFT_Volume":
		return fmt.Sprintf("volume %v", p["UniqueId"])
	case wmitest.ClassSmbGlobalMapping:
		return fmt.Sprintf("mapping %v", p["RemotePath"])
	case wmitest.ClassISCSITargetPortal:
		return fmt.Sprintf("portal %v:%v", p["TargetPortalAddress"], p["TargetPortalPortNumber"])
	case wmitest.ClassISCSITarget:
		return fmt.Sprintf("target %v", p["NodeAddress"])
	case wmitest.ClassISCSISession:
		return fmt.Sprintf("session %v", p["SessionIdentifier"])
	}
	return ""
}
