package console

// Each page names itself and its object in the browser's tab ("exec
// <id> · <kind> · latch"): render reads the page data's PageTitle.

// titled is page data that names its page.
type titled interface{ PageTitle() string }

// filtered is title, then the admin's tenant filter when set.
func filtered(title, tenant string) string {
	if tenant == "" {
		return title
	}
	return title + " · " + tenant
}

func (loginPage) PageTitle() string { return "Log in" }
func (p executionsPage) PageTitle() string {
	if p.Filter.Parent != "" {
		return "children of exec " + p.Filter.Parent
	}
	return "Executions"
}
func (schedulesPage) PageTitle() string       { return "Schedules" }
func (tenantsPage) PageTitle() string         { return "Tenants" }
func (p subscriptionsPage) PageTitle() string { return filtered("Subscriptions", p.Tenant) }
func (p overviewPage) PageTitle() string      { return filtered("Overview", p.Tenant) }
func (p limitsPage) PageTitle() string        { return filtered("Limits", p.Tenant) }
func (p confirmPage) PageTitle() string       { return p.Title }
func (p errorPage) PageTitle() string         { return p.Title }
func (p executionPage) PageTitle() string     { return "exec " + p.E.ID + " · " + p.E.Kind }
func (p schedulePage) PageTitle() string      { return "schedule " + p.S.Name + " · " + p.S.Tenant }
