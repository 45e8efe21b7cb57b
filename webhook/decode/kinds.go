package decode

// Readers for the types in types.go, field for field. Each case returns a
// bit of its own within its object so that a repeated field is refused.

func (r *reader) objectMeta(m *ObjectMeta) { r.only("name", func() { r.str(&m.Name) }) }

func (r *reader) podSpec(s *PodSpec) {
	r.fields(func(name []byte) uint32 {
		switch string(name) {
		case "volumes":
			readSlice(r, &s.Volumes, r.volume)
			return 1 << 0
		case "initContainers":
			readSlice(r, &s.InitContainers, r.container)
			return 1 << 1
		case "containers":
			readSlice(r, &s.Containers, r.container)
			return 1 << 2
		case "ephemeralContainers":
			readSlice(r, &s.EphemeralContainers, r.container)
			return 1 << 3
		case "serviceAccountName":
			r.str(&s.ServiceAccountName)
			return 1 << 4
		case "serviceAccount":
			r.str(&s.DeprecatedServiceAccount)
			return 1 << 5
		case "securityContext":
			readPtr(r, &s.SecurityContext, r.podSecurityContext)
			return 1 << 6
		}
		r.skip()
		return 0
	})
}

func (r *reader) volume(v *Volume) {
	r.fields(func(name []byte) uint32 {
		switch string(name) {
		case "name":
			r.str(&v.Name)
			return 1 << 0
		case "hostPath":
			readPtr(r, &v.HostPath, r.pathSource)
			return 1 << 1
		case "persistentVolumeClaim":
			readPtr(r, &v.PersistentVolumeClaim, r.claimSource)
			return 1 << 2
		}
		r.skip()
		return 0
	})
}

func (r *reader) pathSource(p *PathSource) { r.only("path", func() { r.str(&p.Path) }) }

func (r *reader) claimSource(c *ClaimSource) { r.only("claimName", func() { r.str(&c.ClaimName) }) }

func (r *reader) container(c *Container) {
	r.fields(func(name []byte) uint32 {
		switch string(name) {
		case "name":
			r.str(&c.Name)
			return 1 << 0
		case "volumeMounts":
			readSlice(r, &c.VolumeMounts, r.volumeMount)
			return 1 << 1
		case "securityContext":
			readPtr(r, &c.SecurityContext, r.securityContext)
			return 1 << 2
		case "image":
			r.str(&c.Image)
			return 1 << 3
		}
		r.skip()
		return 0
	})
}

func (r *reader) volumeMount(m *VolumeMount) {
	r.fields(func(name []byte) uint32 {
		switch string(name) {
		case "name":
			r.str(&m.Name)
			return 1 << 0
		case "readOnly":
			r.boolean(&m.ReadOnly)
			return 1 << 1
		case "subPath":
			r.str(&m.SubPath)
			return 1 << 2
		case "subPathExpr":
			r.str(&m.SubPathExpr)
			return 1 << 3
		}
		r.skip()
		return 0
	})
}

func (r *reader) securityContext(sc *SecurityContext) {
	r.fields(func(name []byte) uint32 {
		switch string(name) {
		case "privileged":
			r.boolPtr(&sc.Privileged)
			return 1 << 0
		case "windowsOptions":
			readPtr(r, &sc.WindowsOptions, r.windowsOptions)
			return 1 << 1
		}
		r.skip()
		return 0
	})
}

func (r *reader) podSecurityContext(sc *PodSecurityContext) {
	r.only("windowsOptions", func() { readPtr(r, &sc.WindowsOptions, r.windowsOptions) })
}

func (r *reader) windowsOptions(w *WindowsOptions) {
	r.only("hostProcess", func() { r.boolPtr(&w.HostProcess) })
}

func (r *reader) podTemplateSpec(t *PodTemplateSpec) { r.only("spec", func() { r.podSpec(&t.Spec) }) }

func (r *reader) pod(o *Pod) {
	r.metadataAnd(&o.Metadata, "spec", func() { r.podSpec(&o.Spec) })
}

func (r *reader) workload(o *Workload) {
	r.metadataAnd(&o.Metadata, "spec", func() {
		r.only("template", func() { readPtr(r, &o.Spec.Template, r.podTemplateSpec) })
	})
}

func (r *reader) cronJob(o *CronJob) {
	r.metadataAnd(&o.Metadata, "spec", func() {
		r.only("jobTemplate", func() {
			r.only("spec", func() {
				r.only("template", func() { r.podTemplateSpec(&o.Spec.JobTemplate.Spec.Template) })
			})
		})
	})
}

func (r *reader) podTemplate(o *PodTemplate) {
	r.metadataAnd(&o.Metadata, "template", func() { r.podTemplateSpec(&o.Template) })
}

func (r *reader) persistentVolume(o *PersistentVolume) {
	r.metadataAnd(&o.Metadata, "spec", func() {
		r.fields(func(name []byte) uint32 {
			switch string(name) {
			case "hostPath":
				readPtr(r, &o.Spec.HostPath, r.pathSource)
				return 1 << 0
			case "local":
				readPtr(r, &o.Spec.Local, r.pathSource)
				return 1 << 1
			}
			r.skip()
			return 0
		})
	})
}

// metadataAnd reads an object of which the metadata and one other field
// matter: read consumes that field's value, and every other field is
// skipped.
func (r *reader) metadataAnd(meta *ObjectMeta, field string, read func()) {
	r.fields(func(name []byte) uint32 {
		switch string(name) {
		case "metadata":
			r.objectMeta(meta)
			return 1 << 0
		case field:
			read()
			return 1 << 1
		}
		r.skip()
		return 0
	})
}

// only reads an object of which one field matters: read consumes that
// field's value, and every other field is skipped.
func (r *reader) only(field string, read func()) {
	r.fields(func(name []byte) uint32 {
		if string(name) == field {
			read()
			return 1
		}
		r.skip()
		return 0
	})
}

// readSlice reads an array into dst, one element at a time with read; null
// leaves dst nil and [] makes it empty, as encoding/json does.
func readSlice[T any](r *reader, dst *[]T, read func(*T)) {
	out := make([]T, 0, 4)
	if r.array(func(int) {
		var zero T
		out = append(out, zero)
		read(&out[len(out)-1])
	}) {
		*dst = out
	}
}

// readPtr reads an object into a new *T with read; null leaves dst nil.
func readPtr[T any](r *reader, dst **T, read func(*T)) {
	if r.null() || r.err != nil {
		return
	}
	v := new(T)
	read(v)
	*dst = v
}
