package pipeguard.admission.broken

test_x if {
	x := 
}
