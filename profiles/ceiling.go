package profiles

import (
	"fmt"
	"sort"
)

// LimitsMax is the [limits.max] table: for each key of [limits] it names,
// the loosest value a caller may ask for, with a flag of `tooljail run`
// (--memory 2G) or a served request's limits. A key it leaves out has no
// ceiling: the caller, who could run the CLI with any limit, may ask for
// any. "0" or "unlimited" is no ceiling either. The profile's own limit
// must be within it (Validate). Children override it key by key, as they
// do [limits].
type LimitsMax map[string]string

// checkLimitsMax parses each key of m as the limit it caps, and refuses a
// profile whose own limit is above its ceiling: such a profile could never
// run as it is written.
func (p *Profile) checkLimitsMax() error {
	keys := make([]string, 0, len(p.LimitsMax))
	for k := range p.LimitsMax {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		max := p.LimitsMax[key]
		k := lookupLimit(key)
		if k == nil {
			return keyErr("limits.max."+key, "unknown limit (known: %s)", limitNames())
		}
		if err := k.check(max); err != nil {
			return &KeyError{Key: "limits.max." + key, Err: err.(*KeyError).Err}
		}
		own, ok := p.Limits[key]
		if !ok {
			continue
		}
		if cmp, err := CompareLimit(key, own, max); err == nil && cmp > 0 {
			return keyErr("limits.max."+key, "%q is below the profile's own limits.%s %q; raise the ceiling or lower the limit", max, key, own)
		}
	}
	return nil
}

// CheckCeiling refuses value for the limit key when it is looser than
// the profile's [limits.max] for key. `tooljail run` checks each limit
// flag with it and a server each limit of a request, so that both say
// the same. A value that does not parse is SetLimit's to refuse: nil here.
func (p *Profile) CheckCeiling(key, value string) error {
	max, ok := p.LimitsMax[key]
	if !ok {
		return nil
	}
	cmp, err := CompareLimit(key, value, max)
	if err != nil || cmp <= 0 {
		return nil
	}
	return fmt.Errorf("limits.%s: %s is above the ceiling of profile %s (limits.max.%s = %q); ask for at most %s, or raise the ceiling in the profile", key, value, p.Name, key, max, max)
}
