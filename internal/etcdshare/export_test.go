package etcdshare

// Open counts the watches open.
func (ws *Watches) Open() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.all)
}

// End ends pfx's watch as etcd would cancel it.
func (ws *Watches) End(pfx string) {
	ws.mu.Lock()
	pw := ws.all[pfx]
	ws.mu.Unlock()
	pw.cancel()
}
