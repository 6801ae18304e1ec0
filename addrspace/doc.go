// Package addrspace rebuilds the address spaces of a perf recording's
// processes and of the kernel from perfdata's records, and says which
// mapping covered an address: its file, build-id or device and inode when
// the recording gave them, and the file offset of the address.
//
// Feed a Tracker every record in the order perf delivers them (time order:
// perfdata.RecordsOptions{Ordered: true}) with Update; between two records,
// Lookup answers for the moment of the last one:
//
//	t := addrspace.New()
//	for rs.Next() {
//		switch r := rs.Record().(type) {
//		case *perfdata.Sample:
//			if m := t.Lookup(r.PID(), r.CPUMode(), r.IP); m != nil {
//				fmt.Println(m.Path, m.Offset(r.IP))
//			}
//		default:
//			t.Update(r)
//		}
//	}
//
// The package judges nothing: whether the file now at a mapping's path is
// the one that ran is for its caller (package check) to decide.
//
// # Security
//
// The records are untrusted. A Tracker reads no file and keeps what the
// records describe: memory grows with the mappings and processes they
// create, each bounded by the size of the input. Any address, length and
// pid is accepted; a mapping that runs past the top of the address space
// ends there.
package addrspace
