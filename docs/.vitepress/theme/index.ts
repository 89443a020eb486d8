// The default theme, with one addition: pages whose frontmatter sets
// `pageClass: wide-page` use the whole width, for tables with many columns.
import DefaultTheme from 'vitepress/theme'
import './custom.css'

export default DefaultTheme
