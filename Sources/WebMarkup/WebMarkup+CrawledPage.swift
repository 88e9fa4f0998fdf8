import SyncWire

extension WebMarkup {
    /// The page as `sightline cloud crawl` records it: the preview's fields
    /// (`preview`), the meta keywords, and the type (`og:type`, else the
    /// first schema.org thing's); nil when the page gives no URL (canonical
    /// link or `og:url`), which is what public activities are matched on.
    public var crawledPage: CrawledPage? {
        let preview = preview
        guard let url = preview.url?.text else { return nil }
        return CrawledPage(url: url, title: preview.title?.text, description: preview.description?.text, keywords: metaKeywords,
                           image: preview.image?.text, deepLink: preview.deepLink?.text, appStoreID: preview.appStoreID?.text,
                           type: properties["og:type"] ?? things.first?.type, rating: preview.ratingValue,
                           ratingCount: preview.ratingCount.map { Int64($0) }, price: preview.price?.text)
    }
}
